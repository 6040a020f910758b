-- int_paths__enumerated
-- Every candidate branch of every kept post: the paths from a top-level answerer comment down to a
-- leaf of the post's eligible tree (shared/spec/dataset.md, "Branches"), one row per comment on the
-- path, `position` 1 being the top-level answer. A path is named after its leaf comment.
-- grain: path_id, position
-- contract: contracts.INT_PATHS__ENUMERATED
-- upstream: int_comments__classified
-- The eligible tree holds OP, answerer and tombstone comments only, so any other comment cuts itself
-- and its subtree off, and a comment whose parent is missing is unreachable. An answerer replying to
-- an answerer is not followed: the path stops at the first of them. The recursion walks eligible
-- comments only, one level per step.

with recursive

eligible_comments as (
    select
        submission_id,
        comment_id,
        parent_comment_id,
        is_top_level,
        comment_class
    from int_comments__classified
    where comment_class in ('op', 'answerer', 'tombstone')
),

followed_edges as (
    select
        parent.comment_id as parent_comment_id,
        child.comment_id as child_comment_id
    from eligible_comments as child
    inner join eligible_comments as parent
        on child.parent_comment_id = parent.comment_id
        and child.submission_id = parent.submission_id
    where not (parent.comment_class = 'answerer' and child.comment_class = 'answerer')
),

walks as (
    select
        eligible_comments.submission_id,
        eligible_comments.comment_id,
        [eligible_comments.comment_id] as comment_ids
    from eligible_comments
    where eligible_comments.is_top_level and eligible_comments.comment_class = 'answerer'

    union all

    select
        walks.submission_id,
        followed_edges.child_comment_id as comment_id,
        list_append(walks.comment_ids, followed_edges.child_comment_id) as comment_ids
    from walks
    inner join followed_edges
        on walks.comment_id = followed_edges.parent_comment_id
),

complete_paths as (
    select
        walks.submission_id,
        walks.comment_id as path_id,
        walks.comment_ids
    from walks
    anti join followed_edges
        on walks.comment_id = followed_edges.parent_comment_id
),

path_comments as (
    select
        complete_paths.submission_id,
        complete_paths.path_id,
        path_comment.position,
        path_comment.comment_id
    from complete_paths
    cross join unnest(complete_paths.comment_ids) with ordinality as path_comment (comment_id, position)
),

final as (
    select
        path_comments.submission_id,
        path_comments.path_id,
        path_comments.position,
        path_comments.comment_id,
        eligible_comments.comment_class
    from path_comments
    inner join eligible_comments
        on path_comments.comment_id = eligible_comments.comment_id
)

select * from final
