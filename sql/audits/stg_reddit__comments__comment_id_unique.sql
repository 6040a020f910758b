-- stg_reddit__comments__comment_id_unique
-- comment_id is unique and never null.
-- upstream: stg_reddit__comments

select
    comment_id,
    count(*) as count_rows
from stg_reddit__comments
group by comment_id
having comment_id is null or count(*) > 1
