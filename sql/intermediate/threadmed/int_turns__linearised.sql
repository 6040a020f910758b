-- int_turns__linearised
-- The question/answer turns of every kept branch (shared/spec/dataset.md, "Branches"): the post is
-- question 0, each OP comment is the next question, and an answerer comment answers the question
-- right before it. A question without an answer is an orphan (null answer columns).
-- grain: branch_id, turn
-- contract: contracts.INT_TURNS__LINEARISED
-- upstream: int_paths__screened, int_paths__enumerated, int_comments__classified, stg_reddit__comments,
--     stg_reddit__submissions
-- Answers with an `answer_defect` (answer quality filter) leave the branch, so their question becomes
-- an orphan and the branch goes on. Answerers never follow each other on a path and kept branches hold
-- no tombstone, so each question has at most one answer. Texts come from staging, fetched here for the
-- few comments and posts that make branches.

with

kept_paths as (
    select
        submission_id,
        path_id,
        branch_id,
        count_kept_comments
    from int_paths__screened
    where is_kept
),

path_comments as (
    select * from int_paths__enumerated
),

comments as (
    select * from int_comments__classified
),

comment_texts as (
    select * from stg_reddit__comments
),

submissions as (
    select * from stg_reddit__submissions
),

branch_comments as (
    select
        kept_paths.submission_id,
        kept_paths.branch_id,
        path_comments.position,
        comments.comment_id,
        comments.comment_class,
        comment_texts.body,
        comments.author_pseudonym,
        comments.flair_text,
        comments.created_at
    from kept_paths
    inner join path_comments
        on kept_paths.path_id = path_comments.path_id
        and path_comments.position <= kept_paths.count_kept_comments
    inner join comments
        on path_comments.comment_id = comments.comment_id
    inner join comment_texts
        on path_comments.comment_id = comment_texts.comment_id
    where comments.comment_class = 'op' or comments.answer_defect is null
),

-- Turn of each comment: the number of OP comments up to it. An OP comment opens that turn; an
-- answer belongs to the turn of the last question before it.
numbered as (
    select
        branch_comments.*,
        count(*) filter (where branch_comments.comment_class = 'op') over (
            partition by branch_comments.branch_id
            order by branch_comments.position
            rows between unbounded preceding and current row
        ) as turn
    from branch_comments
),

questions as (
    select
        kept_paths.submission_id,
        kept_paths.branch_id,
        0::bigint as turn,
        submissions.submission_id as question_id,
        post_question_text(submissions.title, submissions.selftext) as question,
        submissions.created_at as asked_at
    from kept_paths
    inner join submissions
        on kept_paths.submission_id = submissions.submission_id

    union all

    select
        numbered.submission_id,
        numbered.branch_id,
        numbered.turn,
        numbered.comment_id as question_id,
        numbered.body as question,
        numbered.created_at as asked_at
    from numbered
    where numbered.comment_class = 'op'
),

answers as (
    select
        numbered.branch_id,
        numbered.turn,
        numbered.comment_id as answer_id,
        numbered.body as answer,
        numbered.author_pseudonym as answerer_pseudonym,
        numbered.flair_text as answerer_flair,
        numbered.created_at as answered_at
    from numbered
    where numbered.comment_class = 'answerer'
),

final as (
    select
        questions.submission_id,
        questions.branch_id,
        questions.turn,
        questions.question_id,
        questions.question,
        questions.asked_at,
        answers.answer_id,
        answers.answer,
        answers.answerer_pseudonym,
        answers.answerer_flair,
        answers.answered_at
    from questions
    left join answers
        on questions.branch_id = answers.branch_id
        and questions.turn = answers.turn
)

select * from final
