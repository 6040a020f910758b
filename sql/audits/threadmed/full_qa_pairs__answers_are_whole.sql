-- full_qa_pairs__answers_are_whole
-- A turn is answered (answer id, text, physician pseudonym and time all set) or an orphan (all null).
-- (That every question has its id, text and time is a generated not-null audit.)
-- upstream: full_qa_pairs

select *
from full_qa_pairs
where
    (answer_id is null) <> (answer is null)
    or (answer_id is null) <> (answered_utc is null)
    or (answer_id is null) <> (physician is null)
    or not regexp_full_match(physician, 'u_[0-9a-f]{12}')
