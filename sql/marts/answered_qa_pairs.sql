-- answered_qa_pairs
-- The turns of the answered dataset's threads: the full thread's turns up to its last answered one,
-- all of them answered. Published as dataset/answered/qa_pairs.parquet.
-- grain: thread_id, turn
-- contract: contracts.QA_PAIRS
-- upstream: int_threads__assembled, int_turns__linearised

with

threads as (
    select * from int_threads__assembled
    where answered_drop_reason is null
),

turns as (
    select * from int_turns__linearised
),

final as (
    select
        threads.thread_id,
        turns.turn,
        turns.question_id,
        turns.question,
        turns.answer_id,
        turns.answer,
        turns.answerer_pseudonym as physician,
        turns.answerer_flair as physician_flair,
        turns.asked_at as asked_utc,
        turns.answered_at as answered_utc
    from threads
    inner join turns
        on threads.branch_id = turns.branch_id
        and turns.turn < threads.count_answered_turns
)

select * from final
order by base36_to_bigint(final.thread_id), final.turn
