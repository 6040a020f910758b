-- base36_to_bigint
-- A Reddit id (base 36, no prefix) as an integer, so that ids compare in creation order: as strings,
-- 'zz' sorts after '100'. Exact up to 12 digits; comment ids have 7.
-- upstream: (none)

create or replace macro base36_to_bigint(reddit_id) as (
    list_reduce(
        list_transform(
            string_split(lower(reddit_id), ''),
            lambda digit: position(digit in '0123456789abcdefghijklmnopqrstuvwxyz')::bigint - 1
        ),
        lambda number, digit: number * 36 + digit,
        0::bigint
    )
);
