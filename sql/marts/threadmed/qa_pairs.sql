-- qa_pairs
-- The turns of a published dataset's threads, one per variant. full: every turn, orphans included (null
-- answer, physician and answered_utc); answered: the turns up to the thread's last answered one, all of
-- them answered. Published as dataset/<variant>/qa_pairs.parquet.
-- grain: thread_id, turn
-- contract: contracts.QA_PAIRS
-- upstream: int_threads__assembled, int_turns__linearised
-- variants: full, answered
-- `physician` and `physician_flair` describe whoever answered: a role in $answer_roles, by default a
-- physician only.

with

threads as (
    select * from int_threads__assembled
    where $variant = 'full' or answered_drop_reason is null
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
        and ($variant = 'full' or turns.turn < threads.count_answered_turns)
)

select * from final
order by base36_to_bigint(final.thread_id), final.turn
