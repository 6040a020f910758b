-- flair_roles__priority_unique
-- No two flair patterns share a priority, so a flair matching several always gets the same role.
-- upstream: flair_roles

select
    priority,
    count(*) as count_patterns
from flair_roles
group by priority
having count(*) > 1
