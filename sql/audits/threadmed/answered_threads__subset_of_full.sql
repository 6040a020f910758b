-- answered_threads__subset_of_full
-- Every answered thread is a full thread with the same OP, date, split and Jaccard, has no orphan and
-- at least $min_answered_pairs QA pairs.
-- upstream: answered_threads, full_threads

select
    answered.*,
    full_threads.split as full_split
from answered_threads as answered
left join full_threads
    on answered.thread_id = full_threads.thread_id
where
    full_threads.thread_id is null
    or answered.op <> full_threads.op
    or answered.created_utc <> full_threads.created_utc
    or answered.split <> full_threads.split
    or answered.jaccard <> full_threads.jaccard
    or answered.n_questions > full_threads.n_questions
    or answered.n_orphans <> 0
    or answered.n_answered <> answered.n_questions
    or answered.n_questions < $min_answered_pairs
