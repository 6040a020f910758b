-- stg_reddit__submissions
-- One row per submission of the chosen subreddit: renamed, typed, deduplicated, text cleaned, author
-- pseudonymised. Every post of the subreddit stays; the dataset's post rules live in int_posts__filtered.
-- grain: submission_id
-- contract: contracts.STG_REDDIT__SUBMISSIONS
-- upstream: raw_reddit__submissions, bots
-- An id seen more than once (overlapping dumps, re-ingests) keeps its latest retrieval, then the copy
-- read last; `count_duplicates` says how many copies were dropped. Usernames stop here: the author is
-- pseudonymised, bot accounts are flagged while the name is still at hand, and mentions of users
-- (`u/name`) become their pseudonyms. A title the dump lacks, or the selftext of a self post, stays null
-- (not read, so int_posts__filtered drops the post naming it); a link post has no selftext to lack.

with

source as (
    select * from raw_reddit__submissions
),

bot_accounts as (
    select lower(username) as username from bots
),

in_subreddit as (
    select * from source
    where lower(subreddit) = lower($subreddit)
),

deduplicated as (
    select
        *,
        count(*) over (partition by id) - 1 as count_duplicates
    from in_subreddit
    qualify row_number() over (
        partition by id
        order by retrieved_utc desc nulls last, source_file desc, source_line desc
    ) = 1
),

-- `is_self` is missing in some records: the `self.<subreddit>` domain tells
with_kind as (
    select
        *,
        coalesce(is_self, starts_with(lower(domain), 'self.'), false) as is_self_post
    from deduplicated
),

renamed as (
    select
        with_kind.id as submission_id,
        with_kind.subreddit,

        -- people: a deleted or empty author is unknown (null)
        pseudonymise_author(with_kind.author, $salt) as author_pseudonym,
        coalesce(lower(with_kind.author) in (select bot_accounts.username from bot_accounts), false)
            as is_bot_author,

        -- text: a removal marker becomes null, and so does text the dump lacks but a link post's selftext
        clean_text(pseudonymise_mentions(with_kind.title, $salt)) as title,
        case
            when is_removal_sentinel(with_kind.selftext) then null
            when with_kind.selftext is null and not with_kind.is_self_post then ''
            else clean_text(pseudonymise_mentions(with_kind.selftext, $salt))
        end as selftext,
        is_removal_sentinel(with_kind.selftext) as is_selftext_removed,

        -- kind of post
        to_timestamp(with_kind.created_utc) as created_at,
        with_kind.is_self_post as is_self,
        lower(with_kind.domain) as domain,
        lower(with_kind.post_hint) as post_hint,
        coalesce(with_kind.is_gallery, false) as is_gallery,
        coalesce(with_kind.is_video, false) as is_video,

        -- moderation
        nullif(with_kind.removed_by_category, '') as removed_by_category,
        nullif(with_kind.banned_by, '') is not null or with_kind.banned_at_utc is not null as is_banned,

        -- lineage
        to_timestamp(with_kind.retrieved_utc) as retrieved_at,
        with_kind.source_file,
        with_kind.source_line,
        with_kind.count_duplicates
    from with_kind
)

select * from renamed
