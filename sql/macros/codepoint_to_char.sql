-- codepoint_to_char
-- The character of a Unicode code point, or U+FFFD when the number is not a valid scalar value
-- (zero, a surrogate, beyond U+10FFFF, null), as HTML parsers do, instead of failing the build.
-- upstream: (none)

create or replace macro codepoint_to_char(codepoint) as (
    case
        when codepoint between 1 and 1114111 and codepoint not between 55296 and 57343 then chr(codepoint)
        else chr(65533)
    end
);
