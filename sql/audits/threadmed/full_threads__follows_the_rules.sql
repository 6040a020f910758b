-- full_threads__follows_the_rules
-- Full threads have at least $min_questions questions, answered or orphan, a known split, a pseudonymous
-- OP and a Jaccard between 0 and 1 (their stratum and split are never null: generated audits).
-- upstream: full_threads

select *
from full_threads
where
    n_questions < $min_questions
    or n_questions <> n_answered + n_orphans
    or split not in ('train', 'val', 'test')
    or not regexp_full_match(op, 'u_[0-9a-f]{12}')
    or jaccard not between 0 and 1
