"""stg_reddit__comments: one cleaned, typed, pseudonymised row per comment of the subreddit."""

from tests.sql.rows import ANSWER, T0, at, pseudonym, raw_comment


def staged(comment_id: str, parent: str | None = None, **overrides):
    """The staged row of raw_comment(comment_id, parent) with default fields."""
    return {
        "comment_id": comment_id,
        "submission_id": "p1",
        "parent_comment_id": parent,
        "is_top_level": parent is None,
        "subreddit": "AskDocs",
        "author_pseudonym": pseudonym("dr_smith"),
        "is_bot_author": False,
        "body": ANSWER,
        "is_body_removed": False,
        "flair_text": "Physician",
        "created_at": at(T0 + 60),
        "distinguished": None,
        "removed_by_category": None,
        "is_banned": False,
        "retrieved_at": at(T0 + 86_400),
        "source_file": "RC_2020-09.zst",
        "source_line": 1,
        "count_duplicates": 0,
        **overrides,
    }


def test_links_to_post_and_parent(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("c1"),
        raw_comment("c2", parent="c1"),
        raw_comment("c3", parent_id="t3_other"),
        raw_comment("c4", parent_id="garbage"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("c1"),
        staged("c2", parent="c1"),
        # a reply to another post's id is not top-level here, and leads nowhere
        staged("c3", is_top_level=False),
        staged("c4", is_top_level=False),
    ]


def test_ids_without_their_prefix_are_not_read(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("c1", link_id="p1", parent_id="t3_p1"),  # was read as post p1
        raw_comment("c2", link_id="t3_", parent_id="t3_"),
        raw_comment("c3", parent_id="c1"),
        raw_comment("c4", parent_id="t1_"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("c1", submission_id=None, is_top_level=False),
        staged("c2", submission_id=None, is_top_level=False),
        staged("c3", is_top_level=False),
        staged("c4", is_top_level=False),
    ]


def test_flair_comes_from_text_or_else_richtext(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("f1", author_flair_text="Physician - ENT/Head &amp; Neck Surgery"),
        raw_comment("f2", author_flair_text=None, author_flair_richtext_text="Physician Assistant"),
        raw_comment("f3", author_flair_text="", author_flair_richtext_text="M.D."),
        raw_comment("f4", author_flair_text=" Registered Nurse", author_flair_richtext_text="ignored"),
        raw_comment("f5", author_flair_text=None, author_flair_richtext_text=None),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("f1", flair_text="Physician - ENT/Head & Neck Surgery"),
        staged("f2", flair_text="Physician Assistant"),
        staged("f3", flair_text="M.D."),
        staged("f4", flair_text="Registered Nurse"),
        staged("f5", flair_text=None),
    ]


def test_removed_and_deleted_content(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("r1", author="[deleted]", body="[deleted]"),
        raw_comment("r2", body="[removed]"),
        raw_comment("r3", author="[deleted]"),
        raw_comment("r4", banned_by="a_mod", removed_by_category="moderator"),
        raw_comment("r5", author="AutoModerator", distinguished="moderator"),
        raw_comment("r6", body="[removed]\n"),  # a line break after the marker
        raw_comment("r7", body="[ Removed by reddit in response to a copyright notice. ]"),
        raw_comment("r8", body=None),  # the dump lacks it: no text, and no marker
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("r1", author_pseudonym=None, body=None, is_body_removed=True),
        staged("r2", body=None, is_body_removed=True),
        staged("r3", author_pseudonym=None),
        staged("r4", is_banned=True, removed_by_category="moderator"),
        staged(
            "r5", author_pseudonym=pseudonym("AutoModerator"), is_bot_author=True, distinguished="moderator"
        ),
        staged("r6", body=None, is_body_removed=True),
        staged("r7", body=None, is_body_removed=True),
        staged("r8", body=None),
    ]


def test_subreddit_filter_and_duplicates(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("s1", subreddit="askDOCS"),
        raw_comment("s2", subreddit="medicine"),
        raw_comment("s3", body="first copy", retrieved_utc=T0 + 5),
        raw_comment("s3", body="second copy", retrieved_utc=T0 + 9),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("s1", subreddit="askDOCS"),
        staged("s3", body="second copy", retrieved_at=at(T0 + 9), count_duplicates=1),
    ]


def test_mentions_become_the_pseudonym_of_the_mentioned_author(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("m1", author="alice", author_flair_text=None,
                    body="Thanks u/dr_smith, and /u/dr_smith: call me on +44 20 7946 0958."),
        raw_comment("m2", parent="m1"),
    ])  # fmt: skip
    assert run_model(duck, "stg_reddit__comments") == [
        staged("m1", author_pseudonym=pseudonym("alice"), flair_text=None,
               body=f"Thanks {pseudonym('dr_smith')}, and {pseudonym('dr_smith')}: call me on [phone]."),
        staged("m2", parent="m1"),
    ]  # fmt: skip
    peppered = pseudonym("dr_smith", "pepper")
    assert run_model(duck, "stg_reddit__comments", salt="pepper")[0]["body"] == (
        f"Thanks {peppered}, and {peppered}: call me on [phone]."
    )
