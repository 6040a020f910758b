-- int_posts__filtered
-- Every staged post with the first rule of shared/spec/dataset.md ("Posts are dropped when") that drops
-- it; `is_kept` posts go on to thread building.
-- grain: submission_id
-- contract: contracts.INT_POSTS__FILTERED
-- upstream: stg_reddit__submissions, stg_reddit__comments, image_domains
-- A post whose title or self text the dump lacks is dropped first, naming it: its question was not read.
-- The time window is checked here rather than in staging so that the funnel can count it. Reasons are
-- tested in the order of the rules, so each dropped post is counted once, under its first reason.
-- Texts stay in staging: int_turns__linearised fetches those of the few posts that make threads.

with

submissions as (
    select * from stg_reddit__submissions
),

comments as (
    select * from stg_reddit__comments
),

media_domains as (
    select lower(domain) as domain from image_domains
),

comment_counts as (
    select
        comments.submission_id,
        count(*) as count_comments
    from comments
    group by comments.submission_id
),

with_question as (
    select
        submissions.*,
        post_question_text(submissions.title, submissions.selftext) as question_text,
        coalesce(comment_counts.count_comments, 0) as count_comments,
        -- a link to an image, a video or a gallery rather than a text post
        not submissions.is_self
        and (
            submissions.post_hint in ('image', 'hosted:video', 'rich:video', 'video', 'gallery')
            or submissions.is_gallery
            or submissions.is_video
            or submissions.domain in (select media_domains.domain from media_domains)
        ) as is_media_link
    from submissions
    left join comment_counts
        on submissions.submission_id = comment_counts.submission_id
),

with_word_count as (
    select
        with_question.*,
        coalesce(count_words(with_question.question_text), 0) as count_question_words
    from with_question
),

with_drop_reason as (
    select
        with_word_count.*,
        case
            when with_word_count.title is null then 'missing_title'
            when with_word_count.selftext is null and not with_word_count.is_selftext_removed
                then 'missing_selftext'
            when with_word_count.created_at is null
                or with_word_count.created_at < $window_start
                or with_word_count.created_at >= $window_end
                then 'outside_window'
            when with_word_count.author_pseudonym is null then 'deleted_author'
            when with_word_count.is_selftext_removed then 'removed_selftext'
            when with_word_count.removed_by_category is not null or with_word_count.is_banned then 'moderated'
            when with_word_count.is_bot_author then 'bot_author'
            when with_word_count.is_media_link and with_word_count.selftext = '' then 'image_only'
            when with_word_count.count_question_words < $min_words then 'too_few_words'
            when with_word_count.count_comments = 0 then 'no_comments'
        end as drop_reason
    from with_word_count
),

final as (
    select
        with_drop_reason.submission_id,
        with_drop_reason.author_pseudonym,
        with_drop_reason.created_at,
        with_drop_reason.count_question_words,
        with_drop_reason.count_comments,
        with_drop_reason.drop_reason,
        with_drop_reason.drop_reason is null as is_kept
    from with_drop_reason
)

select * from final
