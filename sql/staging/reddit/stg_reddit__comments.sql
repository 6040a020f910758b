-- stg_reddit__comments
-- One row per comment of the chosen subreddit: renamed, typed, deduplicated, text cleaned, author
-- pseudonymised, flair resolved to one text. No comment is dropped for its content here.
-- grain: comment_id
-- contract: contracts.STG_REDDIT__COMMENTS
-- upstream: raw_reddit__comments, bots
-- Mentions of users (`u/name`) become their pseudonyms, like the author column.
-- Duplicates keep the latest retrieval, then the copy read last. The flair is `author_flair_text`, or
-- else the text pieces of `author_flair_richtext` (flattened by the ingest), HTML-decoded:
-- 'Physician - ENT/Head &amp; Neck Surgery' arrives escaped.

with

source as (
    select * from raw_reddit__comments
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
        -- ids: `link_id` is 't3_<post>', `parent_id` is 't3_<post>' at top level, else 't1_<comment>'; an id
        -- without its prefix is not read (null), never taken for a post's or a comment's id
        deduplicated.id as comment_id,
        case when regexp_matches(deduplicated.link_id, '^t3_.') then substr(deduplicated.link_id, 4) end
            as submission_id,
        case when regexp_matches(deduplicated.parent_id, '^t1_.') then substr(deduplicated.parent_id, 4) end
            as parent_comment_id,
        coalesce(
            regexp_matches(deduplicated.link_id, '^t3_.') and deduplicated.parent_id = deduplicated.link_id, false
        ) as is_top_level,
        deduplicated.subreddit,

        -- people: a deleted or empty author is unknown (null)
        pseudonymise_author(deduplicated.author, $salt) as author_pseudonym,
        coalesce(lower(deduplicated.author) in (select bot_accounts.username from bot_accounts), false)
            as is_bot_author,

        -- text: a removal marker becomes null, as does a body the dump lacks (or holds as no text)
        case
            when not is_removal_sentinel(deduplicated.body)
                then clean_text(pseudonymise_mentions(deduplicated.body, $salt))
        end as body,
        is_removal_sentinel(deduplicated.body) as is_body_removed,
        nullif(
            clean_text(
                coalesce(nullif(trim(deduplicated.author_flair_text), ''), deduplicated.author_flair_richtext_text)
            ),
            ''
        ) as flair_text,

        -- time and moderation
        to_timestamp(deduplicated.created_utc) as created_at,
        deduplicated.distinguished,
        nullif(deduplicated.removed_by_category, '') as removed_by_category,
        nullif(deduplicated.banned_by, '') is not null as is_banned,

        -- lineage
        to_timestamp(deduplicated.retrieved_utc) as retrieved_at,
        deduplicated.source_file,
        deduplicated.source_line,
        deduplicated.count_duplicates
    from deduplicated
)

select * from renamed
