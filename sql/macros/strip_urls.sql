-- strip_urls
-- Remove URLs: `http://...`, `https://...` and `www....`, case-insensitively.
-- upstream: (none)
-- A URL stops before closing punctuation ("see https://x.org." keeps the full stop) and keeps one
-- level of balanced parentheses. The cheap guard spares the regular expression on most texts. Binding
-- `text` once: see clean_text.

create or replace macro strip_urls(text) as (
    list_transform(
        [text],
        lambda linked: case
            when contains(linked, '://') or contains(lower(linked), 'www.') then regexp_replace(
                linked,
                '(?i)(?:https?://|www\.)(?:[^\s<>"()\[\]]|\([^\s()]*\))*(?:[^\s<>"()\[\].,;:!?''*]|\([^\s()]*\))',
                '',
                'g'
            )
            else linked
        end
    )[1]
);
