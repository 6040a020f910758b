-- int_comments__classified__class_matches_reasons
-- Every comment has a known class; exactly the dropped ones have a drop reason, and only answerer
-- comments may have an answer defect.
-- upstream: int_comments__classified

select
    comment_id,
    comment_class,
    drop_reason,
    answer_defect
from int_comments__classified
where
    comment_class is null
    or comment_class not in ('op', 'answerer', 'tombstone', 'non_answerer', 'dropped')
    or (comment_class = 'dropped') is distinct from (drop_reason is not null)
    or (answer_defect is not null and comment_class <> 'answerer')
