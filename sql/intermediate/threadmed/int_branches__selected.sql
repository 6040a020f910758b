-- int_branches__selected
-- Every kept branch ranked within its post by the branch selection of shared/spec/dataset.md: highest
-- Jaccard overlap between the post's question and the branch's first answer, then more answered
-- questions, more questions, the earliest last comment, the smallest last comment id. The first of
-- each post `is_selected`.
-- grain: branch_id
-- contract: contracts.INT_BRANCHES__SELECTED
-- upstream: int_turns__linearised, int_comments__classified
-- Jaccard compares the sets of lower-cased alphanumeric tokens (Unicode letters and digits). The first
-- answer is the first one kept by the answer quality filter; a branch without any answer scores 0.
-- Comment ids compare as base-36 integers, never as strings.

with

turns as (
    select * from int_turns__linearised
),

comments as (
    select * from int_comments__classified
),

branch_summaries as (
    select
        turns.submission_id,
        turns.branch_id,
        count(*) as count_questions,
        count(turns.answer_id) as count_answered,
        any_value(turns.question) filter (where turns.turn = 0) as post_question,
        arg_min(turns.answer, turns.turn) filter (where turns.answer_id is not null) as first_answer
    from turns
    group by turns.submission_id, turns.branch_id
),

tokenised as (
    select
        branch_summaries.*,
        list_distinct(regexp_extract_all(lower(branch_summaries.post_question), '[\p{L}\p{N}]+'))
            as question_tokens,
        list_distinct(regexp_extract_all(lower(branch_summaries.first_answer), '[\p{L}\p{N}]+'))
            as answer_tokens
    from branch_summaries
),

scored as (
    select
        tokenised.submission_id,
        tokenised.branch_id,
        tokenised.count_questions,
        tokenised.count_answered,
        coalesce(
            len(list_intersect(tokenised.question_tokens, tokenised.answer_tokens))
            / nullif(len(list_distinct(list_concat(tokenised.question_tokens, tokenised.answer_tokens))), 0),
            0
        )::double as jaccard
    from tokenised
),

ranked as (
    select
        scored.*,
        last_comments.created_at as last_comment_at,
        row_number() over (
            partition by scored.submission_id
            order by
                scored.jaccard desc,
                scored.count_answered desc,
                scored.count_questions desc,
                last_comments.created_at asc,
                base36_to_bigint(scored.branch_id) asc
        ) as selection_rank
    from scored
    inner join comments as last_comments
        on scored.branch_id = last_comments.comment_id
),

final as (
    select
        ranked.submission_id,
        ranked.branch_id,
        ranked.jaccard,
        ranked.count_answered,
        ranked.count_questions,
        ranked.last_comment_at,
        ranked.selection_rank,
        ranked.selection_rank = 1 as is_selected
    from ranked
)

select * from final
