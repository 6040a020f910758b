-- stg_reddit__submissions__author_pseudonymised
-- Usernames never get past staging: every known author is a pseudonym `u_` + 12 hex digits.
-- upstream: stg_reddit__submissions

select
    submission_id,
    author_pseudonym
from stg_reddit__submissions
where not regexp_full_match(author_pseudonym, 'u_[0-9a-f]{12}')
