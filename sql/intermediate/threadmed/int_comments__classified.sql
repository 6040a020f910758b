-- int_comments__classified
-- Every staged comment with its flair role and its class for thread building (shared/spec/dataset.md,
-- "Comments"): 'op', 'answerer' (a role in $answer_roles), 'tombstone', 'non_answerer' (anyone else,
-- who cuts the thread) or 'dropped' with a `drop_reason`; answerer comments also carry the
-- `answer_defect` of the answer quality filter, if any.
-- grain: comment_id
-- contract: contracts.INT_COMMENTS__CLASSIFIED
-- upstream: stg_reddit__comments, int_posts__filtered, flair_roles
-- Precedence: a comment whose `link_id` or `parent_id` was not read (no `t3_`/`t1_` prefix) is dropped
-- naming it; a comment under a dropped post is dropped; a reply whose parent is not among the post's
-- staged comments (missing from the dumps, or quarantined) is dropped as `missing_parent`, since no
-- path reaches it; a tombstone stays a tombstone (its body is a
-- one-word marker, so the word rule would otherwise hide it); then bots, moderator notices, comments
-- without a body (the dump lacks it: no removal marker) and short comments are dropped; then OP (same
-- author as the post, case-sensitive), whatever the flair; then the flair role. The role of a flair is that of the highest-priority seed pattern it matches,
-- resolved once per distinct flair text. Bodies stay in staging: int_turns__linearised fetches those
-- of the few comments that make threads.

with

comments as (
    select * from stg_reddit__comments
),

kept_posts as (
    select
        submission_id,
        author_pseudonym as op_pseudonym
    from int_posts__filtered
    where is_kept
),

role_patterns as (
    select * from flair_roles
),

distinct_flairs as (
    select distinct comments.flair_text
    from comments
    where comments.flair_text is not null
),

flair_text_roles as (
    select
        distinct_flairs.flair_text,
        arg_max(role_patterns.role, role_patterns.priority) as flair_role
    from distinct_flairs
    inner join role_patterns
        on regexp_matches(distinct_flairs.flair_text, role_patterns.pattern, 'i')
    group by distinct_flairs.flair_text
),

comment_ids as (
    select
        submission_id,
        comment_id
    from comments
),

with_context as (
    select
        comments.*,
        kept_posts.op_pseudonym,
        kept_posts.submission_id is not null as is_on_kept_post,
        parents.comment_id is not null as has_staged_parent,
        flair_text_roles.flair_role
    from comments
    left join kept_posts
        on comments.submission_id = kept_posts.submission_id
    left join comment_ids as parents
        on comments.parent_comment_id = parents.comment_id
        and comments.submission_id = parents.submission_id
    left join flair_text_roles
        on comments.flair_text = flair_text_roles.flair_text
),

flagged as (
    select
        with_context.*,
        with_context.author_pseudonym is null
        or with_context.is_body_removed
        or with_context.is_banned
        or with_context.removed_by_category is not null as is_tombstone
    from with_context
),

with_drop_reason as (
    select
        flagged.*,
        case
            when flagged.submission_id is null then 'unreadable_link_id'
            when not flagged.is_top_level and flagged.parent_comment_id is null then 'unreadable_parent_id'
            when not flagged.is_on_kept_post then 'post_not_kept'
            when not flagged.is_top_level and not flagged.has_staged_parent then 'missing_parent'
            when flagged.is_tombstone then null
            when flagged.is_bot_author then 'bot_author'
            when flagged.distinguished = 'moderator' then 'moderator_notice'
            when flagged.body is null then 'missing_body'
            when count_words(flagged.body) < $min_words then 'too_few_words'
        end as drop_reason
    from flagged
),

classified as (
    select
        with_drop_reason.*,
        case
            when with_drop_reason.drop_reason is not null then 'dropped'
            when with_drop_reason.is_tombstone then 'tombstone'
            when with_drop_reason.author_pseudonym = with_drop_reason.op_pseudonym then 'op'
            when list_contains($answer_roles, with_drop_reason.flair_role) then 'answerer'
            else 'non_answerer'
        end as comment_class
    from with_drop_reason
),

-- Inputs of the answer quality filter, for answers only: removal markers, characters other than
-- blanks, characters that are neither blanks, letters, digits nor the punctuation of prose, and
-- whether there is a letter or digit at all. Prose punctuation is `. , ; : ! ? ' " ( ) -`, typographic
-- quotes, dashes and the ellipsis; symbols such as `@ # $ % * | < > [ ] { } _ = + \ /` are not, so a
-- line of them reads as garbled. Cleaned text has no blanks but spaces and newlines, and ordinary
-- characters come in long runs, so both counts take few rewrites.
answer_measures as (
    select
        classified.*,
        case
            when classified.comment_class = 'answerer'
                then len(regexp_extract_all(classified.body, '\\?\[(?:removed|deleted)\\?\]'))
        end as count_removed_markers,
        case
            when classified.comment_class = 'answerer'
                then length(replace(replace(classified.body, ' ', ''), E'\n', ''))
        end as count_visible_chars,
        case
            when classified.comment_class = 'answerer' then length(
                regexp_replace(
                    classified.body,
                    '[\s\p{L}\p{N}.,;:!?''"()\-\x{2018}\x{2019}\x{201C}\x{201D}\x{2013}\x{2014}\x{2026}]+',
                    '',
                    'g'
                )
            )
        end as count_unusual_chars,
        case
            when classified.comment_class = 'answerer' then regexp_matches(classified.body, '[\p{L}\p{N}]')
        end as has_letter_or_digit
    from classified
),

with_answer_defect as (
    select
        answer_measures.*,
        case
            when answer_measures.count_removed_markers > $max_removed_markers then 'too_many_removed_markers'
            when not answer_measures.has_letter_or_digit then 'garbled'
            when
                answer_measures.count_visible_chars - answer_measures.count_unusual_chars
                < $min_clean_char_share * answer_measures.count_visible_chars
                then 'garbled'
        end as answer_defect
    from answer_measures
),

final as (
    select
        with_answer_defect.comment_id,
        with_answer_defect.submission_id,
        with_answer_defect.parent_comment_id,
        with_answer_defect.is_top_level,
        with_answer_defect.author_pseudonym,
        with_answer_defect.created_at,
        with_answer_defect.flair_text,
        with_answer_defect.flair_role,
        with_answer_defect.comment_class,
        with_answer_defect.drop_reason,
        with_answer_defect.answer_defect
    from with_answer_defect
)

select * from final
