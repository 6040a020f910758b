-- int_threads__assembled
-- One row per thread of the full dataset (a selected branch, shared/spec/dataset.md "The two
-- datasets") with its counts, its split, and what the answered dataset makes of it: the number of
-- leading turns it keeps (trailing orphans trimmed) or the reason it drops the thread.
-- grain: thread_id
-- contract: contracts.INT_THREADS__ASSEMBLED
-- upstream: int_branches__selected, int_turns__linearised, int_posts__filtered
-- Splits are drawn per OP, not per thread, so one person's threads share a split, and a thread has the
-- same split in both datasets: an OP's split is the fraction given by sha256(seed, OP pseudonym)
-- compared to $train_share and $train_share + $val_share. It depends on the seed and the salt only,
-- so adding or removing threads never moves another OP.

with

selected_branches as (
    select
        submission_id,
        branch_id,
        jaccard
    from int_branches__selected
    where is_selected
),

turns as (
    select * from int_turns__linearised
),

posts as (
    select * from int_posts__filtered
),

turn_counts as (
    select
        turns.branch_id,
        count(*) as count_questions,
        count(turns.answer_id) as count_answered,
        -- the answered dataset keeps the turns up to the last answered one
        coalesce(max(turns.turn) filter (where turns.answer_id is not null) + 1, 0) as count_answered_turns
    from turns
    group by turns.branch_id
),

orphan_counts as (
    select
        turns.branch_id,
        count(*) filter (
            where turns.answer_id is null and turns.turn < turn_counts.count_answered_turns
        ) as count_inner_orphans
    from turns
    inner join turn_counts
        on turns.branch_id = turn_counts.branch_id
    group by turns.branch_id
),

threads as (
    select
        selected_branches.submission_id as thread_id,
        selected_branches.branch_id,
        posts.created_at,
        posts.author_pseudonym as op_pseudonym,
        turn_counts.count_questions,
        turn_counts.count_answered,
        turn_counts.count_questions - turn_counts.count_answered as count_orphans,
        selected_branches.jaccard,
        turn_counts.count_answered_turns,
        orphan_counts.count_inner_orphans
    from selected_branches
    inner join posts
        on selected_branches.submission_id = posts.submission_id
    inner join turn_counts
        on selected_branches.branch_id = turn_counts.branch_id
    inner join orphan_counts
        on selected_branches.branch_id = orphan_counts.branch_id
),

with_split as (
    select
        threads.*,
        ('0x' || left(sha256($seed::varchar || ':' || threads.op_pseudonym), 13))::bigint / pow(2, 52)
            as op_split_fraction
    from threads
),

final as (
    select
        with_split.thread_id,
        with_split.branch_id,
        with_split.created_at,
        with_split.op_pseudonym,
        with_split.count_questions,
        with_split.count_answered,
        with_split.count_orphans,
        with_split.jaccard,
        case
            when with_split.op_split_fraction < $train_share then 'train'
            when with_split.op_split_fraction < $train_share + $val_share then 'val'
            else 'test'
        end as split,
        with_split.count_answered_turns,
        case
            when with_split.count_inner_orphans > 0 then 'orphan_inside'
            when with_split.count_answered_turns < $min_answered_pairs then 'too_few_pairs'
        end as answered_drop_reason
    from with_split
)

select * from final
