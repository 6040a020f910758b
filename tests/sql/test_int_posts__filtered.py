"""int_posts__filtered: every post with the first post rule of dataset.md that drops it."""

from datetime import UTC, datetime

from tests.sql.rows import T0, at, pseudonym, stg_comment, stg_submission

WINDOW_START = datetime(2015, 1, 1, tzinfo=UTC)
WINDOW_END = datetime(2023, 7, 1, tzinfo=UTC)
QUESTION_WORDS = 20  # title (5) + body (15) of the default post


def post(submission_id: str, drop_reason: str | None = None, **overrides):
    return {
        "submission_id": submission_id,
        "author_pseudonym": pseudonym("alice"),
        "created_at": at(T0),
        "count_question_words": QUESTION_WORDS,
        "count_comments": 1,
        "drop_reason": drop_reason,
        "is_kept": drop_reason is None,
        **overrides,
    }


def given_posts(duck, load_rows, posts, comments=None):
    """Load posts; each gets one comment unless `comments` is given."""
    load_rows(duck, "stg_reddit__submissions", posts)
    if comments is None:
        comments = [stg_comment(f"c_{p['submission_id']}", post=p["submission_id"]) for p in posts]
    load_rows(duck, "stg_reddit__comments", comments)


def test_time_window_includes_its_start_and_excludes_its_end(duck, load_rows, run_model):
    given_posts(duck, load_rows, [
        stg_submission("w1", created_at=WINDOW_START),
        stg_submission("w2", created_at=datetime(2014, 12, 31, 23, 59, 59, tzinfo=UTC)),
        stg_submission("w3", created_at=datetime(2023, 6, 30, 23, 59, 59, tzinfo=UTC)),
        stg_submission("w4", created_at=WINDOW_END),
        stg_submission("w5", created_at=None),
    ])  # fmt: skip
    assert run_model(duck, "int_posts__filtered") == [
        post("w1", created_at=WINDOW_START),
        post("w2", "outside_window", created_at=datetime(2014, 12, 31, 23, 59, 59, tzinfo=UTC)),
        post("w3", created_at=datetime(2023, 6, 30, 23, 59, 59, tzinfo=UTC)),
        post("w4", "outside_window", created_at=WINDOW_END),
        post("w5", "outside_window", created_at=None),
    ]


def test_window_is_a_parameter(duck, load_rows, run_model):
    given_posts(duck, load_rows, [stg_submission("w1")])
    assert run_model(duck, "int_posts__filtered", start="2021-01-01", end="2022-01-01") == [
        post("w1", "outside_window")
    ]


def test_deleted_removed_and_moderated_posts(duck, load_rows, run_model):
    given_posts(duck, load_rows, [
        stg_submission("d1", author_pseudonym=None),
        stg_submission("d2", selftext=None, is_selftext_removed=True),
        stg_submission("d3", removed_by_category="moderator"),
        stg_submission("d4", removed_by_category="deleted"),
        stg_submission("d5", is_banned=True),
    ])  # fmt: skip
    assert run_model(duck, "int_posts__filtered") == [
        post("d1", "deleted_author", author_pseudonym=None),
        post("d2", "removed_selftext", count_question_words=0),
        post("d3", "moderated"),
        post("d4", "moderated"),
        post("d5", "moderated"),
    ]


def test_a_post_whose_title_or_self_text_the_dump_lacks_is_dropped_naming_it(duck, load_rows, run_model):
    given_posts(duck, load_rows, [
        stg_submission("m1", title=None),
        stg_submission("m2", selftext=None),
        stg_submission("m3", selftext=None, author_pseudonym=None, created_at=None),
        stg_submission("m4", selftext=None, is_selftext_removed=True),
        stg_submission("m5", selftext=""),
    ])  # fmt: skip
    assert run_model(duck, "int_posts__filtered") == [
        post("m1", "missing_title", count_question_words=0),
        post("m2", "missing_selftext", count_question_words=0),
        post("m3", "missing_selftext", count_question_words=0, author_pseudonym=None, created_at=None),
        post("m4", "removed_selftext", count_question_words=0),
        post("m5", count_question_words=5),
    ]


def test_bot_posts(duck, load_rows, run_model):
    given_posts(duck, load_rows, [stg_submission("b1", is_bot_author=True)])
    assert run_model(duck, "int_posts__filtered") == [post("b1", "bot_author")]


def test_image_only_posts_and_image_posts_with_text(duck, load_rows, run_model):
    title_words = 5
    given_posts(duck, load_rows, [
        stg_submission("i1", is_self=False, post_hint="image", domain="i.redd.it", selftext=""),
        stg_submission("i2", is_self=False, is_gallery=True, domain="reddit.com", selftext=""),
        stg_submission("i3", is_self=False, domain="imgur.com", selftext=""),
        stg_submission("i4", is_self=False, post_hint="hosted:video", domain="v.redd.it", selftext=""),
        stg_submission("i5", is_self=False, is_video=True, domain="v.redd.it", selftext=""),
        stg_submission("i6", is_self=False, post_hint="rich:video", domain="youtube.com", selftext=""),
        # an image post with text is a question; a plain link post is not media
        stg_submission("i7", is_self=False, post_hint="image", domain="i.redd.it"),
        stg_submission("i8", is_self=False, post_hint="link", domain="cdc.gov", selftext=""),
        stg_submission("i9", is_self=True, domain="self.askdocs", selftext=""),
    ])  # fmt: skip
    assert run_model(duck, "int_posts__filtered") == [
        post("i1", "image_only", count_question_words=title_words),
        post("i2", "image_only", count_question_words=title_words),
        post("i3", "image_only", count_question_words=title_words),
        post("i4", "image_only", count_question_words=title_words),
        post("i5", "image_only", count_question_words=title_words),
        post("i6", "image_only", count_question_words=title_words),
        post("i7"),
        post("i8", count_question_words=title_words),
        post("i9", count_question_words=title_words),
    ]


def test_question_needs_five_words_title_included(duck, load_rows, run_model):
    given_posts(duck, load_rows, [
        stg_submission("q1", title="Help", selftext="rash on arm"),
        stg_submission("q2", title="Help", selftext="rash on my arm"),
        stg_submission("q3", title="Rash on my left arm", selftext=""),
    ])  # fmt: skip
    assert run_model(duck, "int_posts__filtered") == [
        post("q1", "too_few_words", count_question_words=4),
        post("q2", count_question_words=5),
        post("q3", count_question_words=5),
    ]
    assert run_model(duck, "int_posts__filtered", min_words=6) == [
        post("q1", "too_few_words", count_question_words=4),
        post("q2", "too_few_words", count_question_words=5),
        post("q3", "too_few_words", count_question_words=5),
    ]


def test_posts_without_comments(duck, load_rows, run_model):
    given_posts(
        duck,
        load_rows,
        [stg_submission("n1"), stg_submission("n2")],
        comments=[
            stg_comment("c1", post="n2", author_pseudonym=None, body=None, is_body_removed=True),
            stg_comment("c2", post="n2"),
            stg_comment("c3", post="elsewhere"),
        ],
    )
    assert run_model(duck, "int_posts__filtered") == [
        post("n1", "no_comments", count_comments=0),
        post("n2", count_comments=2),
    ]


def test_first_rule_in_order_gives_the_reason(duck, load_rows, run_model):
    given_posts(
        duck,
        load_rows,
        [
            stg_submission(
                "o1", author_pseudonym=None, is_bot_author=True, selftext=None, is_selftext_removed=True
            ),
            stg_submission("o2", removed_by_category="reddit", is_bot_author=True, title="Hi", selftext=""),
            stg_submission("o3", created_at=WINDOW_END, author_pseudonym=None),
        ],
        comments=[],
    )
    assert run_model(duck, "int_posts__filtered") == [
        post("o1", "deleted_author", author_pseudonym=None, count_question_words=0, count_comments=0),
        post("o2", "moderated", count_question_words=1, count_comments=0),
        post("o3", "outside_window", author_pseudonym=None, created_at=WINDOW_END, count_comments=0),
    ]
