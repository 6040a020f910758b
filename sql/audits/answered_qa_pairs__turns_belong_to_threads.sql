-- answered_qa_pairs__turns_belong_to_threads
-- Every thread of answered_threads has turns 0..n_questions-1, once each, and every turn has its thread.
-- upstream: answered_qa_pairs, answered_threads

with

turn_counts as (
    select
        thread_id,
        count(*) as count_turns,
        count(distinct turn) as count_distinct_turns,
        min(turn) as first_turn,
        max(turn) as last_turn
    from answered_qa_pairs
    group by thread_id
)

select
    coalesce(threads.thread_id, turn_counts.thread_id) as thread_id,
    threads.n_questions,
    turn_counts.count_turns,
    turn_counts.count_distinct_turns,
    turn_counts.first_turn,
    turn_counts.last_turn
from answered_threads as threads
full outer join turn_counts
    on threads.thread_id = turn_counts.thread_id
where
    threads.thread_id is null
    or turn_counts.thread_id is null
    or turn_counts.count_turns <> threads.n_questions
    or turn_counts.count_distinct_turns <> turn_counts.count_turns
    or turn_counts.first_turn <> 0
    or turn_counts.last_turn <> threads.n_questions - 1
