-- answered_threads__thread_id_unique
-- thread_id is unique and never null.
-- upstream: answered_threads

select
    thread_id,
    count(*) as count_rows
from answered_threads
group by thread_id
having thread_id is null or count(*) > 1
