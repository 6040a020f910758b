"""stg_reddit__submissions: one cleaned, typed, pseudonymised row per submission of the subreddit."""

from tests.sql.rows import QUESTION_BODY, QUESTION_TITLE, T0, at, pseudonym, raw_submission


def staged(submission_id: str, **overrides):
    """The staged row of raw_submission(submission_id) with default fields."""
    return {
        "submission_id": submission_id,
        "subreddit": "AskDocs",
        "author_pseudonym": pseudonym("alice"),
        "is_bot_author": False,
        "title": QUESTION_TITLE,
        "selftext": QUESTION_BODY,
        "is_selftext_removed": False,
        "created_at": at(T0),
        "is_self": True,
        "domain": "self.askdocs",
        "post_hint": None,
        "is_gallery": False,
        "is_video": False,
        "removed_by_category": None,
        "is_banned": False,
        "retrieved_at": at(T0 + 86_400),
        "source_file": "RS_2020-09.zst",
        "source_line": 1,
        "count_duplicates": 0,
        **overrides,
    }


def test_subreddit_is_matched_case_insensitively(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("a1", subreddit="AskDocs"),
        raw_submission("a2", subreddit="askdocs"),
        raw_submission("a3", subreddit="ASKDOCS"),
        raw_submission("a4", subreddit="AskDocs2"),
        raw_submission("a5", subreddit="AskReddit"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("a1"),
        staged("a2", subreddit="askdocs"),
        staged("a3", subreddit="ASKDOCS"),
    ]


def test_duplicate_ids_keep_the_latest_retrieval_then_the_copy_read_last(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("d1", title="old title", retrieved_utc=T0 + 10, source_line=1),
        raw_submission("d1", title="new title", retrieved_utc=T0 + 20, source_line=2),
        raw_submission("d1", title="unknown retrieval", retrieved_utc=None, source_line=3),
        raw_submission("d2", title="first file", source_file="RS_a.zst", source_line=9),
        raw_submission("d2", title="second file", source_file="RS_b.zst", source_line=1),
        raw_submission("d3", title="line 1", source_line=1),
        raw_submission("d3", title="line 2", source_line=2),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("d1", title="new title", retrieved_at=at(T0 + 20), source_line=2, count_duplicates=2),
        staged("d2", title="second file", source_file="RS_b.zst", count_duplicates=1),
        staged("d3", title="line 2", source_line=2, count_duplicates=1),
    ]


def test_text_is_cleaned_and_removal_markers_become_null(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("t1", title="Rash &amp; fever", selftext="See https://x.org/rash.\n\n\n\nThoughts?  "),
        raw_submission("t2", selftext="[removed]"),
        raw_submission("t3", selftext="[deleted]"),
        raw_submission("t4", selftext="\\[removed\\]"),
        # what the dump lacks is unread (null), but a link post's selftext: it has none
        raw_submission("t5", selftext=None, title=None),
        raw_submission("t6", selftext=None, is_self=False, domain="example.org"),
        raw_submission("t7", selftext=None, is_self=None, domain="self.AskDocs"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("t1", title="Rash & fever", selftext="See .\n\nThoughts?"),
        staged("t2", selftext=None, is_selftext_removed=True),
        staged("t3", selftext=None, is_selftext_removed=True),
        staged("t4", selftext=None, is_selftext_removed=True),
        staged("t5", title=None, selftext=None),
        staged("t6", selftext="", is_self=False, domain="example.org"),
        staged("t7", selftext=None),
    ]


def test_authors_are_pseudonymised_and_bots_flagged(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("u1", author="Bob"),
        raw_submission("u2", author="bob"),
        raw_submission("u3", author="[deleted]"),
        raw_submission("u4", author=""),
        raw_submission("u5", author="automoderator"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("u1", author_pseudonym=pseudonym("Bob")),
        staged("u2", author_pseudonym=pseudonym("bob")),
        staged("u3", author_pseudonym=None),
        staged("u4", author_pseudonym=None),
        staged("u5", author_pseudonym=pseudonym("automoderator"), is_bot_author=True),
    ]


def test_salt_changes_every_pseudonym(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [raw_submission("s1")])
    assert run_model(duck, "stg_reddit__submissions", salt="pepper") == [
        staged("s1", author_pseudonym=pseudonym("alice", salt="pepper"))
    ]


def test_mentions_in_title_and_text_become_pseudonyms(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("n1", title="For u/dr_smith only",
                       selftext="As /u/alice_md said, 07700 900123 works."),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("n1", title=f"For {pseudonym('dr_smith')} only",
               selftext=f"As {pseudonym('alice_md')} said, [phone] works."),
    ]  # fmt: skip


def test_media_fields_and_moderation_are_normalised(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("m1", is_self=None, domain="self.AskDocs"),
        raw_submission("m2", is_self=None, domain="I.Imgur.com", post_hint="Image", is_gallery=None),
        raw_submission("m3", removed_by_category="", banned_by="", banned_at_utc=None),
        raw_submission("m4", removed_by_category="moderator", banned_by="mod_team"),
        raw_submission("m5", banned_at_utc=T0),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__submissions") == [
        staged("m1"),
        staged("m2", is_self=False, domain="i.imgur.com", post_hint="image"),
        staged("m3"),
        staged("m4", removed_by_category="moderator", is_banned=True),
        staged("m5", is_banned=True),
    ]
