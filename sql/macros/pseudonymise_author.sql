-- pseudonymise_author
-- The published stand-in for a Reddit username: `u_` + the first 12 hex digits of sha256(salt +
-- username) (shared/spec/dataset.md, "Privacy"). A deleted, empty or missing author gives null.
-- upstream: (none)

create or replace macro pseudonymise_author(author, salt) as (
    case
        when nullif(trim(author), '') is null or author = '[deleted]' then null
        else 'u_' || left(sha256(salt || author), 12)
    end
);
