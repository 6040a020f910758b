"""The oracle data's rules: what an answer says, the teacher reply's parsing and validation, the split."""

import pytest

from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.topics import split_by_patient
from tasks.benchmarks.snomed.oracle.validation import LeakNames, TeacherPair, parse_teacher_reply, rejection

HYPERTENSION = LeakNames(["59621000"], ["Essential hypertension (disorder)"], {})


@pytest.mark.parametrize(
    ("answer", "stance"),
    [
        ("I'm not sure.", "not_known"),
        ("I’m not sure, I haven't noticed anything like that.", "not_known"),
        ("No, but I don't really know.", "not_known"),
        ("I have no idea.", "not_known"),
        ("No, never.", "denied"),
        ("I don't have that.", "denied"),
        ("Yes, my chest hurts.", "stated"),
        ("Nobody checked.", "stated"),
    ],
)
def test_answer_stance(answer, stance):
    assert answer_stance(answer) == stance


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        (
            '{"question": "Any cough?", "answer": "I\'m not sure."}',
            TeacherPair("Any cough?", "I'm not sure."),
        ),
        ('```json\n{"question": "Q?", "answer": " A. "}\n```', TeacherPair("Q?", "A.")),
        ('Here: {"question": "Q?", "answer": "A."}', None),
        ('{"question": "Q?", "answer": ""}', None),
        ('{"question": "Q?", "answer": 3}', None),
        ('["Q?", "A."]', None),
        (None, None),
    ],
)
def test_parse_teacher_reply(text, pair):
    assert parse_teacher_reply(text) == pair


@pytest.mark.parametrize(
    ("pair", "kind", "disclosure", "reason"),
    [
        (None, "positive", "symptoms", "unparseable"),
        (TeacherPair("Q?", "My pressure runs high."), "positive", "symptoms", None),
        (TeacherPair("Q?", "They said it is hypertension."), "positive", "symptoms", "leak"),
        (TeacherPair("Q?", "They said it is hypertension."), "positive", "history", None),
        (TeacherPair("Q?", "Code 59621000."), "positive", "symptoms", "leak"),
        (TeacherPair("Q?", "I'm not sure."), "positive", "symptoms", "positive_not_known"),
        (TeacherPair("Q?", "I'm not sure."), "negative", "symptoms", None),
        (TeacherPair("Q?", "No, never."), "negative", "symptoms", "negative_not_unsure"),
        (TeacherPair("Q?", "Yes, all the time."), "negative", "symptoms", "negative_not_unsure"),
    ],
)
def test_rejection(pair, kind, disclosure, reason):
    assert rejection(pair, kind, disclosure, HYPERTENSION) == reason


def test_the_split_is_by_patient_seeded_and_leaves_no_split_empty():
    ids = [f"p{i}" for i in range(20)]
    split = split_by_patient(ids, seed=3)
    assert split == split_by_patient(list(reversed(ids)), seed=3)
    assert sorted(split) == sorted(ids)
    assert [sum(s == name for s in split.values()) for name in ("train", "validation", "test")] == [16, 2, 2]
    assert sorted(split_by_patient(["a", "b", "c"], seed=0).values()) == ["test", "train", "validation"]
    assert split_by_patient(["a"], seed=0) == {"a": "train"}
