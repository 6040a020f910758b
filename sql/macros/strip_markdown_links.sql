-- strip_markdown_links
-- Replace each markdown link `[text](target "title")` by its `text`.
-- upstream: (none)
-- Runs before strip_urls, which would otherwise leave `[text]()`. The target may hold one level of
-- balanced parentheses (Wikipedia links). Binding `text` once: see clean_text.

create or replace macro strip_markdown_links(text) as (
    list_transform(
        [text],
        lambda linked: case
            when contains(linked, '](') then regexp_replace(
                linked,
                '\[([^\[\]]*)\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+"[^"]*")?\)',
                '\1',
                'g'
            )
            else linked
        end
    )[1]
);
