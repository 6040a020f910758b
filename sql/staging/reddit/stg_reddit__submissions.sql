-- stg_reddit__submissions
-- One row per submission of the chosen subreddit: renamed, typed, deduplicated, text cleaned, author
-- pseudonymised. Every post of the subreddit stays; the dataset's post rules live in int_posts__filtered.
-- grain: submission_id
-- contract: contracts.STG_REDDIT__SUBMISSIONS
-- upstream: raw_reddit__submissions, bots
-- An id seen more than once (overlapping dumps, re-ingests) keeps its latest retrieval, then the copy
-- read last; `count_duplicates` says how many copies were dropped. Usernames stop here: the author is
-- pseudonymised, bot accounts are flagged while the name is still at hand, and mentions of users
-- (`u/name`) become their pseudonyms.

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

renamed as (
    select
        deduplicated.id as submission_id,
        deduplicated.subreddit,

        -- people: a deleted or empty author is unknown (null)
        pseudonymise_author(deduplicated.author, $salt) as author_pseudonym,
        coalesce(lower(deduplicated.author) in (select bot_accounts.username from bot_accounts), false)
            as is_bot_author,

        -- text: a removal marker becomes null
        coalesce(clean_text(pseudonymise_mentions(deduplicated.title, $salt)), '') as title,
        case
            when not is_removal_sentinel(deduplicated.selftext)
                then coalesce(clean_text(pseudonymise_mentions(deduplicated.selftext, $salt)), '')
        end as selftext,
        is_removal_sentinel(deduplicated.selftext) as is_selftext_removed,

        -- kind of post; `is_self` is missing in some records, the `self.<subreddit>` domain tells
        to_timestamp(deduplicated.created_utc) as created_at,
        coalesce(deduplicated.is_self, starts_with(lower(deduplicated.domain), 'self.'), false) as is_self,
        lower(deduplicated.domain) as domain,
        lower(deduplicated.post_hint) as post_hint,
        coalesce(deduplicated.is_gallery, false) as is_gallery,
        coalesce(deduplicated.is_video, false) as is_video,

        -- moderation
        nullif(deduplicated.removed_by_category, '') as removed_by_category,
        nullif(deduplicated.banned_by, '') is not null or deduplicated.banned_at_utc is not null as is_banned,

        -- lineage
        to_timestamp(deduplicated.retrieved_utc) as retrieved_at,
        deduplicated.source_file,
        deduplicated.source_line,
        deduplicated.count_duplicates
    from deduplicated
)

select * from renamed
