-- int_paths__screened
-- Each candidate path after the tombstone rules of shared/spec/dataset.md ("Branches"): trailing
-- tombstones are trimmed, and a path is discarded when a tombstone is left inside it, when trimming
-- made it a copy of another path, or when it has fewer than $min_questions questions (post included).
-- grain: path_id
-- contract: contracts.INT_PATHS__SCREENED
-- upstream: int_paths__enumerated
-- A kept path becomes a branch named after its last comment (`branch_id`), which is unique among kept
-- paths: two paths that trim to the same last comment are the same branch, and the one with the
-- smallest leaf id (base 36) represents it.

with

path_comments as (
    select * from int_paths__enumerated
),

trimmed as (
    select
        path_comments.submission_id,
        path_comments.path_id,
        max(path_comments.position) filter (where path_comments.comment_class <> 'tombstone')
            as count_kept_comments,
        arg_max(path_comments.comment_id, path_comments.position)
            filter (where path_comments.comment_class <> 'tombstone') as branch_id,
        min(path_comments.position) filter (where path_comments.comment_class = 'tombstone')
            as first_tombstone_position,
        -- trailing tombstones are never OP comments, so trimming does not change this count
        1 + count(*) filter (where path_comments.comment_class = 'op') as count_questions
    from path_comments
    group by path_comments.submission_id, path_comments.path_id
),

with_discard_reason as (
    select
        trimmed.*,
        case
            when trimmed.first_tombstone_position < trimmed.count_kept_comments then 'tombstone_inside'
            when
                row_number() over (
                    partition by trimmed.branch_id
                    order by base36_to_bigint(trimmed.path_id)
                ) > 1
                then 'duplicate_after_trim'
            when trimmed.count_questions < $min_questions then 'too_few_questions'
        end as discard_reason
    from trimmed
),

final as (
    select
        with_discard_reason.submission_id,
        with_discard_reason.path_id,
        with_discard_reason.branch_id,
        with_discard_reason.count_kept_comments,
        with_discard_reason.count_questions,
        with_discard_reason.discard_reason,
        with_discard_reason.discard_reason is null as is_kept
    from with_discard_reason
)

select * from final
