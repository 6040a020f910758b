"""Tables of a patient-eval run: every answer each patient gave, and its scores."""

import pyarrow as pa

from tasks.benchmarks.snomed.oracle.contracts import CALL_FIELDS
from tasks.data.contracts import Contract, schema

_ANSWER_FIELDS = (
    ("run_id", pa.string()),
    ("model", pa.string()),  # the patient's name
    ("case_id", pa.string()),
    ("epoch", pa.int32()),  # the asking: 0, 1, ...
    ("question_id", pa.string()),  # "<source>-<index>", unique within the case
    ("source", pa.string()),  # generated | oracle_test
    ("kind", pa.string()),  # positive | negative
    ("subject", pa.string()),  # condition | observation
    ("topic", pa.string()),  # condition code or observation kind
)
_ANSWER_KEY = ("run_id", "model", "case_id", "question_id", "epoch")

# One row per question asked: the question, the patient's answer, or the failed call.
PATIENT_ANSWERS = Contract(
    name="patient_answers",
    schema=schema(
        *_ANSWER_FIELDS,
        ("question", pa.string()),
        ("text", pa.string()),
        *CALL_FIELDS,
    ),
    key=_ANSWER_KEY,
    not_null=("status",),
)

# One row per question asked: the rule verdicts (patient_bench/scoring.py) and the judge's, null where a
# verdict does not apply (disclosure on a negative question) or the call failed.
PATIENT_SCORES = Contract(
    name="patient_scores",
    schema=schema(
        *_ANSWER_FIELDS,
        ("status", pa.string()),  # ok | failed
        ("stance", pa.string()),  # not_known | denied | stated | mixed
        ("disclosed", pa.bool_()),
        ("hallucinated", pa.bool_()),
        ("leaked", pa.bool_()),
        ("leaked_codes", pa.list_(pa.string())),
        ("lay", pa.bool_()),
        ("clinical_terms", pa.list_(pa.string())),
        ("unread_letters", pa.string()),  # letters the word rules cannot read ("" when read whole)
        ("words", pa.int32()),
        ("consistent", pa.bool_()),  # the same on every asking of the question
        # ok | unparseable | judge_cut (the judge's last reply cut at its max_tokens) | failed; null: no judge
        ("judge_status", pa.string()),
        ("faithful", pa.bool_()),
        ("judge_reason", pa.string()),
        ("judge_call_key", pa.string()),
    ),
    key=_ANSWER_KEY,
    not_null=("status",),
)
