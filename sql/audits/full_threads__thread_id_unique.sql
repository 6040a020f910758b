-- full_threads__thread_id_unique
-- thread_id is unique and never null.
-- upstream: full_threads

select
    thread_id,
    count(*) as count_rows
from full_threads
group by thread_id
having thread_id is null or count(*) > 1
