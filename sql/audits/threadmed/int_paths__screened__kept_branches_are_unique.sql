-- int_paths__screened__kept_branches_are_unique
-- Kept paths have distinct branch ids and enough questions; discarded ones have a known reason.
-- upstream: int_paths__screened

with

paths as (
    select
        *,
        count(*) filter (where is_kept) over (partition by branch_id) as count_kept_with_branch
    from int_paths__screened
)

select
    path_id,
    branch_id,
    count_questions,
    discard_reason,
    count_kept_with_branch
from paths
where
    is_kept is distinct from (discard_reason is null)
    or discard_reason not in ('tombstone_inside', 'duplicate_after_trim', 'too_few_questions')
    or (is_kept and count_questions < $min_questions)
    or (is_kept and count_kept_with_branch > 1)
