-- threads
-- The threads of a published dataset (shared/spec/dataset.md, "The two datasets"), one per variant.
-- full: every selected branch with at least $min_questions questions, orphans included.
-- answered: full threads with their trailing orphan questions trimmed, kept when no orphan is left and
-- at least $min_answered_pairs QA pairs remain. Published as dataset/<variant>/threads.parquet.
-- grain: thread_id
-- contract: contracts.THREADS
-- upstream: int_threads__assembled, length_strata
-- variants: full, answered
-- The length stratum counts QA pairs, and in the full dataset every question is a pair, answered or
-- orphan, so it is taken from `n_questions` (the paper's "37,191 QA pairs" are its questions). An
-- answered thread's counts and stratum are those of the trimmed thread; its split and Jaccard are the
-- full thread's (same branch, same OP).

with

threads as (
    select * from int_threads__assembled
    where $variant = 'full' or answered_drop_reason is null
),

strata as (
    select * from length_strata
),

-- The questions the variant keeps: all of them, or those up to the last answered one.
kept_counts as (
    select
        threads.*,
        case when $variant = 'full' then threads.count_questions else threads.count_answered_turns end
            as count_kept_questions,
        case when $variant = 'full' then threads.count_answered else threads.count_answered_turns end
            as count_kept_answered,
        case when $variant = 'full' then threads.count_orphans else 0::bigint end as count_kept_orphans
    from threads
),

final as (
    select
        kept_counts.thread_id,
        kept_counts.created_at as created_utc,
        kept_counts.op_pseudonym as op,
        kept_counts.count_kept_questions as n_questions,
        kept_counts.count_kept_answered as n_answered,
        kept_counts.count_kept_orphans as n_orphans,
        strata.stratum,
        kept_counts.split,
        kept_counts.jaccard
    from kept_counts
    left join strata
        on kept_counts.count_kept_questions between strata.min_pairs
        and coalesce(strata.max_pairs, kept_counts.count_kept_questions)
)

select * from final
order by final.created_utc, base36_to_bigint(final.thread_id)
