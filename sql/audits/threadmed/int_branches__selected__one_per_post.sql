-- int_branches__selected__one_per_post
-- Every post with kept branches has exactly one selected branch, the first-ranked one.
-- upstream: int_branches__selected

select
    submission_id,
    count(*) filter (where is_selected) as count_selected,
    min(selection_rank) as best_rank
from int_branches__selected
group by submission_id
having count(*) filter (where is_selected) <> 1 or min(selection_rank) <> 1
