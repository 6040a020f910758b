-- post_question_text
-- The question of turn 0: the cleaned title, then a blank line and the cleaned selftext when there is
-- one (shared/spec/dataset.md, "Text cleaning"). A removed selftext (null) gives null.
-- upstream: (none)

create or replace macro post_question_text(title, selftext) as (
    case
        when selftext = '' then title
        else title || E'\n\n' || selftext
    end
);
