-- normalise_whitespace
-- Drop zero-width characters, turn every other run of blanks (tabs, carriage returns, no-break and
-- Unicode spaces) into one space, keep at most two consecutive newlines, remove blanks around newlines
-- and at both ends. Words are then separated by exactly one space or one or two newlines.
-- upstream: (none)
-- The guard finds the texts that need any of this in one scan; the rewrites only run on those.
-- Binding `text` once: see clean_text.

create or replace macro normalise_whitespace(text) as (
    list_transform(
        [text],
        lambda spaced: case
            when regexp_matches(
                spaced,
                '[\t\f\v\r\x{00A0}\x{1680}\x{2000}-\x{200D}\x{2028}\x{2029}\x{202F}\x{205F}\x{2060}\x{3000}\x{FEFF}]|  | \n|\n |\n\n\n|^[ \n]|[ \n]$'
            ) then regexp_replace(
                regexp_replace(
                    regexp_replace(
                        regexp_replace(
                            regexp_replace(spaced, '[\x{200B}-\x{200D}\x{2060}\x{FEFF}]', '', 'g'),
                            ' *[\t\f\v\r\x{00A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}][\t\f\v\r\x{00A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000} ]*|  +',
                            ' ',
                            'g'
                        ),
                        '(?: ?\n ?){3,}',
                        E'\n\n',
                        'g'
                    ),
                    ' \n ?|\n ',
                    E'\n',
                    'g'
                ),
                '^[ \n]+|[ \n]+$',
                '',
                'g'
            )
            else spaced
        end
    )[1]
);
