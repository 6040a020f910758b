-- mask_email_addresses
-- Replace e-mail addresses by `[email]` (shared/spec/dataset.md, "Privacy").
-- upstream: (none)
-- Binding `text` once: see clean_text.

create or replace macro mask_email_addresses(text) as (
    list_transform(
        [text],
        lambda unmasked: case
            when contains(unmasked, '@') then regexp_replace(
                unmasked,
                '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}',
                '[email]',
                'g'
            )
            else unmasked
        end
    )[1]
);
