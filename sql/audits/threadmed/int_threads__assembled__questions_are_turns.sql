-- int_threads__assembled__questions_are_turns
-- A thread's questions are exactly its branch's turns, so each published thread has the turns
-- 0..n_questions-1 (int_turns__linearised numbers them without gaps; the answered variant keeps the first
-- count_answered_turns). The generated audits check that every published turn has its thread.
-- upstream: int_threads__assembled, int_turns__linearised

with

branch_turns as (
    select
        branch_id,
        count(*) as count_turns
    from int_turns__linearised
    group by branch_id
)

select
    threads.thread_id,
    threads.branch_id,
    threads.count_questions,
    branch_turns.count_turns
from int_threads__assembled as threads
left join branch_turns
    on threads.branch_id = branch_turns.branch_id
where branch_turns.count_turns is distinct from threads.count_questions
