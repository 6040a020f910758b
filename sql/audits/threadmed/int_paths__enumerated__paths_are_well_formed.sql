-- int_paths__enumerated__paths_are_well_formed
-- Each path starts with a top-level answerer comment, numbers its comments 1..n without gaps or
-- repeats, and ends with its own leaf (`path_id`).
-- upstream: int_paths__enumerated, int_comments__classified

with

paths as (
    select
        path_comments.path_id,
        count(*) as count_comments,
        count(distinct path_comments.position) as count_positions,
        max(path_comments.position) as last_position,
        arg_max(path_comments.comment_id, path_comments.position) as last_comment_id,
        arg_min(path_comments.comment_id, path_comments.position) as first_comment_id
    from int_paths__enumerated as path_comments
    group by path_comments.path_id
),

violations as (
    select
        paths.*,
        first_comments.comment_class as first_comment_class,
        first_comments.is_top_level as is_first_comment_top_level
    from paths
    inner join int_comments__classified as first_comments
        on paths.first_comment_id = first_comments.comment_id
    where
        paths.count_positions <> paths.count_comments
        or paths.last_position <> paths.count_comments
        or paths.last_comment_id <> paths.path_id
        or first_comments.comment_class <> 'answerer'
        or not first_comments.is_top_level
)

select * from violations
