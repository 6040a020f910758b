-- is_removal_sentinel
-- Whether a selftext or body is only Reddit's removal marker, `[deleted]` or `[removed]`, also in the
-- markdown-escaped form some dumps carry (`\[removed\]`). Null is not a marker.
-- upstream: (none)

create or replace macro is_removal_sentinel(text) as (
    coalesce(trim(text) in ('[deleted]', '[removed]', '\[deleted\]', '\[removed\]'), false)
);
