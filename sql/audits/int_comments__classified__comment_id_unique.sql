-- int_comments__classified__comment_id_unique
-- comment_id is unique and never null: classification neither loses nor multiplies comments.
-- upstream: int_comments__classified

select
    comment_id,
    count(*) as count_rows
from int_comments__classified
group by comment_id
having comment_id is null or count(*) > 1
