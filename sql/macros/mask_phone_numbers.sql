-- mask_phone_numbers
-- Replace phone numbers by `[phone]` (shared/spec/dataset.md, "Privacy"), in the formats people write:
-- international (`+` country code, then 6 to 14 digits in groups, `+44 (0)20 7946 0958`), North
-- American (3-3-4 with an optional `1` prefix, `1-800-555-0199`, `(555) 123-4567`; local 3-4 with a
-- dash, `555-0143`), and national numbers with the trunk prefix 0 (`020 7946 0958`, `07700 900123`,
-- `0412 345 678`, `(02) 9876 5432`, `01 23 45 67 89`). Groups are separated by nothing, a space, a dot
-- or a dash.
-- upstream: (none)
-- Deliberately shaped so that doses, lab values, dates and ranges survive (`120/80`, `2019-04-01`,
-- `0.5 mg`, `3-4 times`, `05.04.2023`): only a `+` lets free digit groups through, national numbers
-- must start with 0 (no dose, year or age does), the word boundaries keep longer digit runs (ids)
-- whole, and a local 3-4 number whose parts are both round (`500-1000`, `200-2000`) is a range.

create or replace macro mask_phone_numbers(text) as (
    regexp_replace(
        text,
        '\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d(?:[ .-]?\d){5,13}\b'
        || '|(?:\b1[ .-])?(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]?\d{4}\b'
        || '|(?:\(0\d{1,4}\)|\b0\d{1,4})[ .-]?\d{3,4}[ .-]?\d{3,4}\b'
        || '|\b0\d(?:[ .-]?\d{2}){4}\b'
        || '|\b(?:[2-9]\d[1-9]-\d{4}|[2-9]\d0-\d{2}(?:[1-9]\d|\d[1-9]))\b',
        '[phone]',
        'g'
    )
);
