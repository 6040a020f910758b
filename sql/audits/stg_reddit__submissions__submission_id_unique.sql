-- stg_reddit__submissions__submission_id_unique
-- submission_id is unique and never null.
-- upstream: stg_reddit__submissions

select
    submission_id,
    count(*) as count_rows
from stg_reddit__submissions
group by submission_id
having submission_id is null or count(*) > 1
