-- mask_phone_numbers
-- Replace phone numbers by `[phone]` (shared/spec/dataset.md, "Privacy"): ten digits grouped 3-3-4, the
-- area code optionally in parentheses, separated by nothing, a space, a dot or a dash, optionally after
-- a `+` country code.
-- upstream: (none)
-- Deliberately narrow so that doses, lab values and dates (`120/80`, `2019-04-01`, `0.5 mg`) survive;
-- longer digit runs are not phone numbers either, hence the word boundaries.

create or replace macro mask_phone_numbers(text) as (
    regexp_replace(
        text,
        '(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]?\d{4}\b',
        '[phone]',
        'g'
    )
);
