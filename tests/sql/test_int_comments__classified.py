"""int_comments__classified: each comment's flair role and class (op, answerer, tombstone, ...)."""

import pytest

from tests.sql.rows import T0, at, pseudonym, raw_comment, raw_submission, stg_comment

OP = pseudonym("alice")
DOCTOR = pseudonym("dr_smith")


def kept_post(submission_id: str = "p1", drop_reason: str | None = None):
    return {
        "submission_id": submission_id,
        "author_pseudonym": OP,
        "created_at": at(T0),
        "count_question_words": 20,
        "count_comments": 1,
        "drop_reason": drop_reason,
        "is_kept": drop_reason is None,
    }


def classified(comment_id: str, comment_class: str, **overrides):
    return {
        "comment_id": comment_id,
        "submission_id": "p1",
        "parent_comment_id": None,
        "is_top_level": True,
        "author_pseudonym": DOCTOR,
        "created_at": at(T0 + 60),
        "flair_text": "Physician",
        "flair_role": "physician",
        "comment_class": comment_class,
        "drop_reason": None,
        "answer_defect": None,
        **overrides,
    }


@pytest.fixture
def given(duck, load_rows):
    """Load comments under one kept post p1 (and any extra posts)."""

    def load(comments, posts=None):
        load_rows(duck, "int_posts__filtered", posts or [kept_post()])
        load_rows(duck, "stg_reddit__comments", comments)

    return load


def test_flair_roles_come_from_the_seed_patterns(duck, given, run_model):
    flairs = {
        "r01": "Physician",
        "r02": "Verified Physician",
        "r03": "Physician | Moderator | Top Contributor",
        "r04": "Physician - Cardiology",
        "r05": "M.D.",
        "r06": "Physician Assistant",
        "r07": "Physicians Assistant",
        "r08": "Registered Nurse",
        "r09": "Nurse Practitioner",
        "r10": "This user has not yet been verified.",
        "r11": "Layperson/not verified as healthcare professional.",
        "r12": "Test Flair - Physician",
        "r13": "Pharmacist",
        "r14": "Medical Student",
        "r15": None,
    }
    given([stg_comment(comment_id, flair_text=flair) for comment_id, flair in flairs.items()])
    roles = {
        "r01": "physician", "r02": "physician", "r03": "physician", "r04": "physician", "r05": "physician",
        "r06": "physician_assistant", "r07": "physician_assistant", "r08": "registered_nurse",
        "r09": "nurse_practitioner", "r10": "unverified", "r11": "layperson", "r12": "other",
        "r13": "pharmacist", "r14": "medical_student", "r15": None,
    }  # fmt: skip
    assert run_model(duck, "int_comments__classified") == [
        classified(
            comment_id,
            "answerer" if roles[comment_id] == "physician" else "non_answerer",
            flair_text=flair,
            flair_role=roles[comment_id],
        )
        for comment_id, flair in flairs.items()
    ]


def test_answer_roles_is_a_parameter(duck, given, run_model):
    given([stg_comment("n1", flair_text="Nurse Practitioner"), stg_comment("n2", flair_text="Physician")])
    assert run_model(duck, "int_comments__classified", answer_roles=["nurse_practitioner"]) == [
        classified("n1", "answerer", flair_text="Nurse Practitioner", flair_role="nurse_practitioner"),
        classified("n2", "non_answerer"),
    ]


def test_op_comments_are_questions_whatever_their_flair(duck, given, run_model):
    given([
        stg_comment("o1", author_pseudonym=OP, flair_text=None),
        stg_comment("o2", author_pseudonym=OP, flair_text="Physician"),
    ])  # fmt: skip
    assert run_model(duck, "int_comments__classified") == [
        classified("o1", "op", author_pseudonym=OP, flair_text=None, flair_role=None),
        classified("o2", "op", author_pseudonym=OP),
    ]


def test_op_is_matched_case_sensitively(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [raw_submission("p1", author="Bob")])
    load_rows(duck, "raw_reddit__comments", [
        raw_comment("k1", author="Bob", author_flair_text=None),
        raw_comment("k2", author="bob", author_flair_text=None),
    ])  # fmt: skip
    run_model(duck, "stg_reddit__submissions")
    run_model(duck, "stg_reddit__comments")
    run_model(duck, "int_posts__filtered")
    assert run_model(duck, "int_comments__classified") == [
        classified("k1", "op", author_pseudonym=pseudonym("Bob"), flair_text=None, flair_role=None),
        classified("k2", "non_answerer", author_pseudonym=pseudonym("bob"), flair_text=None, flair_role=None),
    ]


def test_tombstones_whatever_else_they_are(duck, given, run_model):
    given([
        stg_comment("t1", author_pseudonym=None),
        stg_comment("t2", body=None, is_body_removed=True),
        stg_comment("t3", is_banned=True),
        stg_comment("t4", removed_by_category="moderator"),
        stg_comment("t5", author_pseudonym=None, body=None, is_body_removed=True, flair_text=None),
        stg_comment("t6", is_bot_author=True, body=None, is_body_removed=True),
    ])  # fmt: skip
    assert run_model(duck, "int_comments__classified") == [
        classified("t1", "tombstone", author_pseudonym=None),
        classified("t2", "tombstone"),
        classified("t3", "tombstone"),
        classified("t4", "tombstone"),
        classified("t5", "tombstone", author_pseudonym=None, flair_text=None, flair_role=None),
        classified("t6", "tombstone"),
    ]


def test_dropped_comments(duck, given, run_model):
    given(
        [
            stg_comment("x1", is_bot_author=True),
            stg_comment("x2", distinguished="moderator", flair_text="Physician | Moderator"),
            stg_comment("x3", distinguished="admin"),
            stg_comment("x4", body="Looks fine to me."),
            stg_comment("x5", body="Looks fine to me, honestly."),
            stg_comment("x6", post="p2"),
            stg_comment("x7", post="never_staged"),
            # ids or a body the dump did not give in a form that reads
            stg_comment("x8", post=None, is_top_level=False),
            stg_comment("x9", is_top_level=False),
            stg_comment("xa", body=None),
            # a reply whose parent the dumps lack, or hold under another post, is out of every path's reach
            stg_comment("xb", parent="gone"),
            stg_comment("xc", parent="x6"),
            stg_comment("xd", parent="x1"),
        ],
        posts=[kept_post(), kept_post("p2", drop_reason="image_only")],
    )
    assert run_model(duck, "int_comments__classified") == [
        classified("x1", "dropped", drop_reason="bot_author"),
        classified("x2", "dropped", drop_reason="moderator_notice", flair_text="Physician | Moderator"),
        classified("x3", "answerer"),
        classified("x4", "dropped", drop_reason="too_few_words"),
        classified("x5", "answerer"),
        classified("x6", "dropped", drop_reason="post_not_kept", submission_id="p2"),
        classified("x7", "dropped", drop_reason="post_not_kept", submission_id="never_staged"),
        classified("x8", "dropped", drop_reason="unreadable_link_id", submission_id=None, is_top_level=False),
        classified("x9", "dropped", drop_reason="unreadable_parent_id", is_top_level=False),
        classified("xa", "dropped", drop_reason="missing_body"),
        classified("xb", "dropped", drop_reason="missing_parent", **reply_to("gone")),
        classified("xc", "dropped", drop_reason="missing_parent", **reply_to("x6")),
        classified("xd", "answerer", **reply_to("x1")),
    ]


def reply_to(parent_comment_id: str) -> dict[str, object]:
    return {"parent_comment_id": parent_comment_id, "is_top_level": False}


def test_answer_quality_filter(duck, given, run_model):
    given([
        stg_comment("a1", body="It was [removed] and then [deleted] by someone else."),
        stg_comment("a2", body="Your earlier comment was [removed] but the answer stands."),
        stg_comment("a3", body="▒▒▓ ▞▒▓▓ ▞■▚b ■▓▓ ██▚ yes this is fine"),
        stg_comment("a4", body="Ça va, docteur — c’est « bénin », 100% sûr, d’accord?"),
        stg_comment("a5", body="▒▒▓ ▞▒▓▓ ▞■▚b ■▓▓ ██▚ yes this is fine", author_pseudonym=OP),
    ])  # fmt: skip
    assert run_model(duck, "int_comments__classified") == [
        classified("a1", "answerer", answer_defect="too_many_removed_markers"),
        classified("a2", "answerer"),
        classified("a3", "answerer", answer_defect="garbled"),
        classified("a4", "answerer"),
        classified("a5", "op", author_pseudonym=OP),
    ]
    lenient = {"max_removed_markers": 2, "min_clean_char_share": 0.2}
    assert run_model(duck, "int_comments__classified", **lenient) == [
        classified("a1", "answerer"),
        classified("a2", "answerer"),
        classified("a3", "answerer"),
        classified("a4", "answerer"),
        classified("a5", "op", author_pseudonym=OP),
    ]


def test_symbols_are_not_ordinary_punctuation(duck, given, run_model):
    # ordinary punctuation is that of prose; `@ # $ % ^ & * ~ |` and the like are not, and a text
    # without a letter or a digit is garbled whatever its share of punctuation
    given([
        stg_comment("s1", body="@@@ ### $$$ %%% ^^^ &&& *** ~~~ ||||"),
        stg_comment("s2", body="<<>> [[]] {{}} __ == ++ \\\\ // ok"),
        stg_comment("s3", body="... !!! ??? --- ((( ))) ;;; ::: ,,,"),
        stg_comment("s4", body="“Well,” she said – it’s fine… (really): rest, fluids; don’t worry! Okay?"),
        stg_comment("s5", body="Take 500 mg/day (about 10% more) & rest: see #3 in my list * twice."),
    ])  # fmt: skip
    assert run_model(duck, "int_comments__classified") == [
        classified("s1", "answerer", answer_defect="garbled"),
        classified("s2", "answerer", answer_defect="garbled"),
        classified("s3", "answerer", answer_defect="garbled"),
        classified("s4", "answerer"),
        classified("s5", "answerer"),
    ]
    assert run_model(duck, "int_comments__classified", min_clean_char_share=0.0) == [
        classified("s1", "answerer", answer_defect="garbled"),
        classified("s2", "answerer"),
        classified("s3", "answerer", answer_defect="garbled"),
        classified("s4", "answerer"),
        classified("s5", "answerer"),
    ]


def test_comments_count_whatever_their_own_date(duck, given, run_model):
    # the window applies to posts only: a late reply on a kept post is still part of its thread
    late = at(1_800_000_000)  # 2027
    given([stg_comment("late", created_at=late)])
    assert run_model(duck, "int_comments__classified") == [classified("late", "answerer", created_at=late)]
