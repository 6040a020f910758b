-- mask_phone_numbers
-- Replace phone numbers by `[phone]` (shared/spec/dataset.md, "Privacy"), in the formats people write:
-- international (`+`, `00` or North America's `011` before the country code, then 6 to 14 digits in
-- groups, `+44 (0)20 7946 0958`, `0044 20 7946 0958`, `011 44 20 7946 0958`), North American (3-3-4
-- with an optional `1` prefix, `1-800-555-0199`, `(555) 123-4567`; local 3-4, `555-0143`, `555 0143`),
-- Indian mobiles written 5-5 (`98765 43210`, first digit 6 to 9: TRAI's numbering plan), and national
-- numbers with the trunk prefix 0 (`020 7946 0958`, `07700 900123`, `0412 345 678`, `(02) 9876 5432`,
-- `01 23 45 67 89`). Groups are separated by nothing, a space, a dot or a dash. Full-width digits and
-- signs (`５５５－０１４３`) are folded to ASCII first, as Unicode NFKC does, so they are masked too.
-- upstream: (none)
-- Deliberately shaped so that doses, lab values, dates and ranges survive (`120/80`, `2019-04-01`,
-- `0.5 mg`, `3-4 times`, `05.04.2023`): only an international prefix lets free digit groups through,
-- national numbers must start with 0 (no dose, year or age does), the word boundaries keep longer digit
-- runs (ids) whole, a local 3-4 or 5-5 number whose parts are both round (`500-1000`, `60000-80000`) is a
-- range, and a local 3-4 written with a space must not end in a year or in 00 (`in 325 2019`, `325 1000`).

create or replace macro mask_phone_numbers(text) as (
    regexp_replace(
        translate(text, '０１２３４５６７８９＋（）－．', '0123456789+()-.'),
        '(?:\+|\b00[ .-]?|\b011[ .-]?)\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d(?:[ .-]?\d){5,13}\b'
        || '|(?:\b1[ .-])?(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]?\d{4}\b'
        || '|(?:\(0\d{1,4}\)|\b0\d{1,4})[ .-]?\d{3,4}[ .-]?\d{3,4}\b'
        || '|\b0\d(?:[ .-]?\d{2}){4}\b'
        || '|\b[6-9]\d(?:[1-9]\d\d|\d[1-9]\d|\d\d[1-9])[ -]?\d{5}\b'
        || '|\b[6-9]\d{4}[ -]?\d{2}(?:[1-9]\d\d|\d[1-9]\d|\d\d[1-9])\b'
        || '|\b(?:[2-9]\d[1-9]-\d{4}|[2-9]\d0-\d{2}(?:[1-9]\d|\d[1-9]))\b'
        || '|\b[2-9]\d\d (?:[03-9]\d|1[0-8]|2[1-9])(?:[1-9]\d|\d[1-9])\b',
        '[phone]',
        'g'
    )
);
