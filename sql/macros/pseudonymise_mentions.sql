-- pseudonymise_mentions
-- Replace every mention of a Reddit user, `u/name`, `/u/name`, `/user/name` or `@name`, by that user's
-- pseudonym (shared/spec/dataset.md, "Privacy"), computed by pseudonymise_author as for an author, so
-- that a mention and the author columns agree. Runs on raw text, before clean_text.
-- upstream: pseudonymise_author
-- A handle is letters, digits, `_` or `-`, at least 3 of them (Reddit's minimum; its maximum of 20 is not
-- applied, since a longer name written after `u/` is still somebody's name), after the start or a
-- character that is not part of a word; the new editor escapes its underscores (`u/jane\_doe`). The
-- handle is taken as written, since the account's own spelling is not at hand here. `u/[deleted]`,
-- `U/S` (ultrasound) and `ALT 40 U/L` are no mentions, nor is `10 u/day` (a unit after a number), nor an
-- e-mail address (its `@` follows a word character) or `@10am` (an `@` handle starts with a letter or _).
-- A replacement cannot call a function, so mentions are fenced with NUL characters in one pass and every
-- second piece of the split is a mention (a NUL of the text itself is dropped first). Binding `text` once: see clean_text.

create or replace macro pseudonymise_mentions(text, salt) as (
    list_transform(
        [text],
        lambda mentioning: case
            when regexp_matches(mentioning, '(?i)u/|/user/|@') then array_to_string(
                list_transform(
                    [
                        string_split(
                            regexp_replace(
                                replace(mentioning, chr(0), ''),
                                '(^|[^A-Za-z0-9_])((?:/?[uU]/|/(?i:user)/|@[A-Za-z_])(?:[A-Za-z0-9_-]|\\_)+)',
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
                                and length(regexp_replace(piece, '^(?:/?[uU]/|/(?i:user)/|@)|\\', '', 'g')) >= 3
                                and not regexp_matches(pieces[position - 1], '\d ?$')
                                then pseudonymise_author(
                                    regexp_replace(piece, '^(?:/?[uU]/|/(?i:user)/|@)|\\', '', 'g'), salt
                                )
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
