"""The shared verdict parser on the consultation judge's yes/no scale (ThReadMed's numeric scale is tested
with its scorer, tests/tasks/benchmarks/threadmed/test_scorer.py)."""

import pytest

from tasks.benchmarks.consult.judge import FQR_SCALE as CORRECT
from tasks.evals.verdicts import Verdict, parse_verdict

REPLIES = {
    "rubric-json": ('{"correct": true, "reason": "Switches drug."}', Verdict(True, "Switches drug.")),
    "rubric-json-false": ('{"correct": false, "reason": "Keeps it."}', Verdict(False, "Keeps it.")),
    "upper-case-key": ('{"CORRECT": true}', Verdict(True, None)),
    "fenced-after-notes": (
        'Notes first.\n```json\n{"correct": false, "reason": "x"}\n```',
        Verdict(False, "x"),
    ),
    "string-value": ('{"correct": "yes", "reason": "ok"}', Verdict(True, "ok")),
    "label-line": ("Correct: false\nReason: misses the allergy", Verdict(False, "misses the allergy")),
    "bare-word": ("True.", Verdict(True, None)),
    "truncated-after-value": ('{"correct": true, "reason": "cut', Verdict(True, "cut")),
    "two-objects-agreeing": (
        '{"correct": true} then {"correct": true, "reason": "sure"}',
        Verdict(True, "sure"),
    ),
    # Contradictory, off the scale or missing: never a verdict.
    "two-objects-disagreeing": ('{"correct": true}\nOn reflection: {"correct": false}', None),
    "label-contradicts-json": ('correct: no\n{"correct": true}', None),
    "duplicate-key": ('{"correct": true, "correct": false}', None),
    "number": ('{"correct": 1}', None),
    "null": ('{"correct": null}', None),
    "word-off-scale": ('{"correct": "partly"}', None),
    "label-in-a-sentence": ("It is correct: it names the drug", None),
    "wrong-key": ('{"SCORE": 1.0}', None),
    "echoed-template": ('{"correct": <true or false>, "reason": "<one sentence>"}', None),
    "refusal": ("I cannot judge this.", None),
    # A verdict stated outside the JSON, in any form, must agree with it.
    "sentence-contradicts": ('The answer is incorrect.\n{"correct": true}', None),
    "negated-sentence-contradicts": ('The reply is not correct.\n{"correct": true}', None),
    "contracted-negation-contradicts": ('The answer isn\'t correct.\n{"correct": true}', None),
    "sentence-contradicts-false": ('The answer is medically correct.\n{"correct": false}', None),
    "verdict-label-contradicts": ('Verdict: false\n{"correct": true}', None),
    "full-width-label-contradicts": ('ＣＯＲＲＥＣＴ: false\n{"correct": true}', None),
    "sentence-agrees": ('The answer is incorrect.\n{"correct": false, "reason": "x"}', Verdict(False, "x")),
    "negated-sentence-agrees": ('The answer is not correct.\n{"correct": false}', Verdict(False, None)),
    "sentence-about-a-detail": (
        'The dose is correct.\n{"correct": false, "reason": "keeps the allergen"}',
        Verdict(False, "keeps the allergen"),
    ),
    "partly-correct-is-no-verdict-word": (
        'The answer is partly correct.\n{"correct": false}',
        Verdict(False, None),
    ),
    "empty": ("", None),
    "none": (None, None),
}


@pytest.mark.parametrize(("reply", "expected"), REPLIES.values(), ids=REPLIES.keys())
def test_a_judge_reply_parses_to_a_yes_or_no_verdict_or_to_nothing(reply, expected):
    assert parse_verdict(reply, CORRECT) == expected
