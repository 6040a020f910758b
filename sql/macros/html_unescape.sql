-- html_unescape
-- Decode HTML character references: named ones (`&nbsp;`) from the html_entities seed, decimal
-- (`&#8217;`) and hexadecimal (`&#x200B;`) ones by code point. Unknown names stay as they are.
-- upstream: codepoint_to_char, html_entities
-- Reddit's API escapes `&`, so a reference a user typed arrives as `&amp;#x200B;`: `&amp;` is decoded
-- first, which yields what readers saw on Reddit. Binding `text` once: see clean_text.
-- The seed reaches the macro as a session variable holding one map, set here: a lambda cannot read a
-- table, and a map joined to every row would be copied into every row.

set variable html_entities = (
    select map(list(entity), list(characters)) from html_entities
);

create or replace macro html_unescape(text) as (
    list_transform(
        [replace(text, '&amp;', '&')],
        lambda escaped: case
            when contains(escaped, '&') then list_reduce(
                list_distinct(
                    regexp_extract_all(escaped, '&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});')
                ),
                lambda unescaped, reference: replace(
                    unescaped,
                    reference,
                    case
                        when reference ilike '&#x%'
                            then codepoint_to_char(try_cast('0x' || reference[4:-2] as integer))
                        when reference like '&#%'
                            then codepoint_to_char(try_cast(reference[3:-2] as integer))
                        else coalesce(getvariable('html_entities')[reference], reference)
                    end
                ),
                escaped
            )
            else escaped
        end
    )[1]
);
