-- int_threads__assembled__counts_add_up
-- Questions are answered or orphans; the answered dataset keeps a prefix of the thread, and keeps the
-- thread only with enough pairs; the split is one of train, val, test.
-- upstream: int_threads__assembled

select
    thread_id,
    count_questions,
    count_answered,
    count_orphans,
    count_answered_turns,
    answered_drop_reason,
    split
from int_threads__assembled
where
    count_questions <> count_answered + count_orphans
    or count_questions < $min_questions
    or count_answered_turns > count_questions
    or count_answered_turns < count_answered
    or (answered_drop_reason is null and count_answered_turns < $min_answered_pairs)
    or answered_drop_reason not in ('orphan_inside', 'too_few_pairs')
    or split is null
    or split not in ('train', 'val', 'test')
