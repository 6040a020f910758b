-- stats_funnel
-- How many rows each stage of the build kept and dropped, and why, in build order (`stage_order`).
-- A stage's reason rows add up to what it received; its row with a null reason is its total, the rows
-- it passed on (as in the ingest rows of funnel.json, which publish.py puts before these and which
-- also count the quarantined lines, so they are not repeated here).
-- grain: stage, reason
-- contract: contracts.STATS_FUNNEL
-- upstream: raw_reddit__submissions, raw_reddit__comments, stg_reddit__submissions,
--     stg_reddit__comments, int_posts__filtered, int_comments__classified, int_paths__screened,
--     int_branches__selected, int_threads__assembled
-- Stages: submissions_staged, comments_staged
-- ('kept', 'duplicate_id', and 'other_subreddit' as the remainder of the raw rows); posts ('kept' or
-- the drop reason); comments (the eligible classes 'op', 'answerer', 'tombstone', or 'non_answerer'
-- and the drop reasons); answers (answerer comments: 'kept' or the answer defect); paths ('kept' or the
-- discard reason); branches ('selected', 'not_selected'); threads_full (kept posts: 'kept', or
-- 'no_top_level_answer', 'no_kept_path'); threads_answered ('kept' or the answered drop reason);
-- answered_split (answered threads by split; no total). This mart reads every layer on purpose:
-- accounting for each layer is its job.

with

posts as (
    select * from int_posts__filtered
),

comments as (
    select * from int_comments__classified
),

paths as (
    select * from int_paths__screened
),

branches as (
    select * from int_branches__selected
),

threads as (
    select * from int_threads__assembled
),

staging_counts as (
    select
        2 as stage_order,
        'submissions_staged' as stage,
        (select count(*) from raw_reddit__submissions) as count_read,
        count(*) as count_kept,
        coalesce(sum(count_duplicates), 0) as count_duplicates
    from stg_reddit__submissions

    union all

    select
        3 as stage_order,
        'comments_staged' as stage,
        (select count(*) from raw_reddit__comments) as count_read,
        count(*) as count_kept,
        coalesce(sum(count_duplicates), 0) as count_duplicates
    from stg_reddit__comments
),

posts_with_paths as (
    select distinct paths.submission_id
    from paths
),

post_outcomes as (
    select
        case
            when threads.thread_id is not null then 'kept'
            when posts_with_paths.submission_id is null then 'no_top_level_answer'
            else 'no_kept_path'
        end as reason
    from posts
    left join threads
        on posts.submission_id = threads.thread_id
    left join posts_with_paths
        on posts.submission_id = posts_with_paths.submission_id
    where posts.is_kept
),

-- One row per stage and reason; `is_kept` says whether the stage passed those rows on (null: the stage
-- only describes its rows and has no total).
reason_rows as (
    select
        staging_counts.stage_order,
        staging_counts.stage,
        'kept' as reason,
        true as is_kept,
        staging_counts.count_kept as count_rows
    from staging_counts

    union all

    select
        staging_counts.stage_order,
        staging_counts.stage,
        'duplicate_id' as reason,
        false as is_kept,
        staging_counts.count_duplicates as count_rows
    from staging_counts

    union all

    select
        staging_counts.stage_order,
        staging_counts.stage,
        'other_subreddit' as reason,
        false as is_kept,
        staging_counts.count_read - staging_counts.count_kept - staging_counts.count_duplicates as count_rows
    from staging_counts

    union all

    select
        4 as stage_order,
        'posts' as stage,
        coalesce(posts.drop_reason, 'kept') as reason,
        posts.is_kept,
        count(*) as count_rows
    from posts
    group by all

    union all

    select
        5 as stage_order,
        'comments' as stage,
        coalesce(comments.drop_reason, comments.comment_class) as reason,
        comments.comment_class in ('op', 'answerer', 'tombstone') as is_kept,
        count(*) as count_rows
    from comments
    group by all

    union all

    select
        6 as stage_order,
        'answers' as stage,
        coalesce(comments.answer_defect, 'kept') as reason,
        comments.answer_defect is null as is_kept,
        count(*) as count_rows
    from comments
    where comments.comment_class = 'answerer'
    group by all

    union all

    select
        7 as stage_order,
        'paths' as stage,
        coalesce(paths.discard_reason, 'kept') as reason,
        paths.is_kept,
        count(*) as count_rows
    from paths
    group by all

    union all

    select
        8 as stage_order,
        'branches' as stage,
        case when branches.is_selected then 'selected' else 'not_selected' end as reason,
        branches.is_selected as is_kept,
        count(*) as count_rows
    from branches
    group by all

    union all

    select
        9 as stage_order,
        'threads_full' as stage,
        post_outcomes.reason,
        post_outcomes.reason = 'kept' as is_kept,
        count(*) as count_rows
    from post_outcomes
    group by all

    union all

    select
        10 as stage_order,
        'threads_answered' as stage,
        coalesce(threads.answered_drop_reason, 'kept') as reason,
        threads.answered_drop_reason is null as is_kept,
        count(*) as count_rows
    from threads
    group by all

    union all

    select
        11 as stage_order,
        'answered_split' as stage,
        threads.split as reason,
        null::boolean as is_kept,
        count(*) as count_rows
    from threads
    where threads.answered_drop_reason is null
    group by all
),

-- Every filtering stage that received rows gets a total, even when it kept none of them.
stage_totals as (
    select
        reason_rows.stage_order,
        reason_rows.stage,
        null::varchar as reason,
        coalesce(sum(reason_rows.count_rows) filter (where reason_rows.is_kept), 0) as count_rows
    from reason_rows
    where reason_rows.is_kept is not null
    group by reason_rows.stage_order, reason_rows.stage
),

final as (
    select
        reason_rows.stage_order::bigint as stage_order,
        reason_rows.stage,
        reason_rows.reason,
        reason_rows.count_rows::bigint as count_rows
    from reason_rows

    union all

    select
        stage_totals.stage_order::bigint as stage_order,
        stage_totals.stage,
        stage_totals.reason,
        stage_totals.count_rows::bigint as count_rows
    from stage_totals
)

select * from final
order by final.stage_order, final.reason nulls first
