-- full_qa_pairs
-- The turns of the full dataset's threads, orphans included (null answer, physician and
-- answered_utc). Published as dataset/full/qa_pairs.parquet.
-- grain: thread_id, turn
-- contract: contracts.QA_PAIRS
-- upstream: int_threads__assembled, int_turns__linearised
-- `physician` and `physician_flair` describe whoever answered: a role in $answer_roles, by default a
-- physician only.

with

threads as (
    select * from int_threads__assembled
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
)

select * from final
order by base36_to_bigint(final.thread_id), final.turn
