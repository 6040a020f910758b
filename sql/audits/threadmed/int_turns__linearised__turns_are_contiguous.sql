-- int_turns__linearised__turns_are_contiguous
-- Each branch has turns 0..n-1, once each; turn 0 is the post; answer columns are all set or all null.
-- upstream: int_turns__linearised

with

branches as (
    select
        branch_id,
        count(*) as count_turns,
        count(distinct turn) as count_distinct_turns,
        min(turn) as first_turn,
        max(turn) as last_turn,
        bool_and(turn <> 0 or question_id = submission_id) as is_post_first,
        bool_and(
            (answer_id is null) = (answer is null)
            and (answer_id is null) = (answered_at is null)
        ) as has_consistent_answers
    from int_turns__linearised
    group by branch_id
)

select * from branches
where
    count_turns <> count_distinct_turns
    or first_turn <> 0
    or last_turn <> count_turns - 1
    or not is_post_first
    or not has_consistent_answers
