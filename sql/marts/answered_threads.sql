-- answered_threads
-- The threads of the answered dataset (shared/spec/dataset.md, "The two datasets"): full threads with
-- their trailing orphan questions trimmed, kept when no orphan is left and at least
-- $min_answered_pairs QA pairs remain. Published as dataset/answered/threads.parquet.
-- grain: thread_id
-- contract: contracts.THREADS
-- upstream: int_threads__assembled, length_strata
-- Counts and stratum are those of the trimmed thread; split and Jaccard are the full thread's (same
-- branch, same OP).

with

threads as (
    select * from int_threads__assembled
    where answered_drop_reason is null
),

strata as (
    select * from length_strata
),

final as (
    select
        threads.thread_id,
        threads.created_at as created_utc,
        threads.op_pseudonym as op,
        threads.count_answered_turns as n_questions,
        threads.count_answered_turns as n_answered,
        0::bigint as n_orphans,
        strata.stratum,
        threads.split,
        threads.jaccard
    from threads
    left join strata
        on threads.count_answered_turns between strata.min_pairs
        and coalesce(strata.max_pairs, threads.count_answered_turns)
)

select * from final
order by final.created_utc, base36_to_bigint(final.thread_id)
