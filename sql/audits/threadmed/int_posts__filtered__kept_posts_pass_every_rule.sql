-- int_posts__filtered__kept_posts_pass_every_rule
-- A post is kept exactly when it has no drop reason, every drop reason is a known one, and kept posts
-- have an author, enough words and at least one comment.
-- upstream: int_posts__filtered

select
    submission_id,
    drop_reason,
    is_kept,
    count_question_words,
    count_comments
from int_posts__filtered
where
    is_kept is distinct from (drop_reason is null)
    or drop_reason not in (
        'missing_title', 'missing_selftext', 'outside_window', 'deleted_author', 'removed_selftext', 'moderated', 'bot_author', 'image_only',
        'too_few_words', 'no_comments'
    )
    or (is_kept and (author_pseudonym is null or count_question_words < $min_words or count_comments = 0))
