-- stats_funnel__stages_add_up
-- Each stage accounts for exactly the rows the stage before it passed on: its reasons add up to that
-- stage's total (or, for answers, to the answerer comments).
-- upstream: stats_funnel

with

stage_inputs as (
    select *
    from (
        values
            ('posts', 'submissions_staged', null),
            ('comments', 'comments_staged', null),
            ('answers', 'comments', 'answerer'),
            ('branches', 'paths', null),
            ('threads_full', 'posts', null),
            ('threads_answered', 'threads_full', null),
            ('answered_split', 'threads_answered', null)
    ) as inputs (stage, feeding_stage, feeding_reason)
),

received as (
    select
        stage_inputs.stage,
        coalesce(sum(funnel.count_rows), 0) as count_received
    from stage_inputs
    left join stats_funnel as funnel
        on stage_inputs.feeding_stage = funnel.stage
        and funnel.reason is not distinct from stage_inputs.feeding_reason
    group by stage_inputs.stage
),

accounted as (
    select
        stage_inputs.stage,
        coalesce(sum(funnel.count_rows) filter (where funnel.reason is not null), 0) as count_accounted
    from stage_inputs
    left join stats_funnel as funnel
        on stage_inputs.stage = funnel.stage
    group by stage_inputs.stage
)

select
    received.stage,
    received.count_received,
    accounted.count_accounted
from received
inner join accounted
    on received.stage = accounted.stage
where received.count_received <> accounted.count_accounted
