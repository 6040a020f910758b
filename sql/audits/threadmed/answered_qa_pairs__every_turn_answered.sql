-- answered_qa_pairs__every_turn_answered
-- Every turn of the answered dataset has an answer, identical to the full dataset's turn.
-- upstream: answered_qa_pairs, full_qa_pairs

select answered.*
from answered_qa_pairs as answered
left join full_qa_pairs as full_pairs
    on answered.thread_id = full_pairs.thread_id
    and answered.turn = full_pairs.turn
where
    answered.answer_id is null
    or full_pairs.thread_id is null
    or answered.question_id <> full_pairs.question_id
    or answered.answer_id <> full_pairs.answer_id
