-- is_removal_sentinel
-- Whether a selftext or body is only one of Reddit's removal markers: `[deleted]` or `[removed]`, also in the
-- markdown-escaped form some dumps carry (`\[removed\]`), or the copyright removal's overwrite
-- (pushshift-format.md item 32), with any blanks and line breaks around it. Null is not a marker.
-- upstream: (none)

create or replace macro is_removal_sentinel(text) as (
    coalesce(
        trim(text, ' ' || chr(9) || chr(10) || chr(13)) in (
            '[deleted]', '[removed]', '\[deleted\]', '\[removed\]',
            '[ Removed by reddit in response to a copyright notice. ]'
        ),
        false
    )
);
