-- pseudonymise_mentions
-- Replace every mention of a Reddit user, `u/name` or `/u/name`, by that user's pseudonym
-- (shared/spec/dataset.md, "Privacy"), computed by pseudonymise_author as for an author, so that a
-- mention and the author columns agree. Runs on raw text, before clean_text.
-- upstream: pseudonymise_author
-- A handle is what Reddit accepts: 3 to 20 letters, digits, `_` or `-`, after the start or a character
-- that is not part of a word; the new editor escapes its underscores (`u/jane\_doe`). The handle is
-- taken as written, since the account's own spelling is not at hand here. `u/[deleted]`, `U/S`
-- (ultrasound) and `ALT 40 U/L` are no mentions, nor is `10 u/day` (a unit after a number).
-- A replacement cannot call a function, so mentions are fenced with NUL characters in one pass and every
-- second piece of the split is a mention (a NUL of the text itself is dropped first). Binding `text` once: see clean_text.

create or replace macro pseudonymise_mentions(text, salt) as (
    list_transform(
        [text],
        lambda mentioning: case
            when contains(lower(mentioning), 'u/') then array_to_string(
                list_transform(
                    [
                        string_split(
                            regexp_replace(
                                replace(mentioning, chr(0), ''),
                                '(^|[^A-Za-z0-9_])(/?[uU]/(?:[A-Za-z0-9_-]|\\_)+)',
                                '\1' || chr(0) || '\2' || chr(0),
                                'g'
                            ),
                            chr(0)
                        )
                    ],
                    lambda pieces: list_transform(
                        pieces,
                        lambda piece, position: case
                            when
                                position % 2 = 0
                                and length(regexp_replace(piece, '^/?[uU]/|\\', '', 'g')) between 3 and 20
                                and not regexp_matches(pieces[position - 1], '\d ?$')
                                then pseudonymise_author(regexp_replace(piece, '^/?[uU]/|\\', '', 'g'), salt)
                            else piece
                        end
                    )
                )[1],
                ''
            )
            else mentioning
        end
    )[1]
);
