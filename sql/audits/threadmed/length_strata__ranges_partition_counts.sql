-- length_strata__ranges_partition_counts
-- The strata cover every number of QA pairs exactly once: they start at 0, each ends right before the
-- next one starts, and only the last one is open-ended.
-- upstream: length_strata

with

strata as (
    select
        stratum,
        min_pairs,
        max_pairs,
        lead(min_pairs) over (order by min_pairs) as next_min_pairs,
        row_number() over (order by min_pairs) as stratum_number
    from length_strata
),

violations as (
    select
        stratum,
        min_pairs,
        max_pairs,
        next_min_pairs
    from strata
    where
        (stratum_number = 1 and min_pairs <> 0)
        or (next_min_pairs is null and max_pairs is not null)
        or (next_min_pairs is not null and max_pairs is distinct from next_min_pairs - 1)
)

select * from violations
