-- full_threads
-- The threads of the full dataset (shared/spec/dataset.md, "The two datasets"): every selected branch
-- with at least $min_questions questions, orphans included. Published as dataset/full/threads.parquet.
-- grain: thread_id
-- contract: contracts.THREADS
-- upstream: int_threads__assembled, length_strata
-- The length stratum counts QA pairs, and in the full dataset every question is a pair, answered or
-- orphan, so it is taken from `n_questions` (the paper's "37,191 QA pairs" are its questions).

with

threads as (
    select * from int_threads__assembled
),

strata as (
    select * from length_strata
),

final as (
    select
        threads.thread_id,
        threads.created_at as created_utc,
        threads.op_pseudonym as op,
        threads.count_questions as n_questions,
        threads.count_answered as n_answered,
        threads.count_orphans as n_orphans,
        strata.stratum,
        threads.split,
        threads.jaccard
    from threads
    left join strata
        on threads.count_questions between strata.min_pairs and coalesce(strata.max_pairs, threads.count_questions)
)

select * from final
order by final.created_utc, base36_to_bigint(final.thread_id)
