-- full_threads__ops_never_straddle_splits
-- All threads of one OP are in the same split.
-- upstream: full_threads

select
    op,
    list(distinct split order by split) as splits
from full_threads
group by op
having count(distinct split) > 1
