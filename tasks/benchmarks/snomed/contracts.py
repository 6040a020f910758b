"""Tables of the SNOMED benchmark, defined once: the case set (`cases.parquet`, one row per case) and a
run's conversations, predictions and scores."""

from typing import Any

import pyarrow as pa

from tasks.benchmarks.snomed.case import Case
from tasks.data.contracts import Contract, schema

ITEM = pa.struct([("code", pa.string()), ("display", pa.string())])

CASES = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("patient_id", pa.string(), nullable=False),
        pa.field("reference_date", pa.date32()),
        pa.field("age_years", pa.int32()),
        pa.field("sex", pa.string()),
        pa.field(
            "conditions",
            pa.list_(
                pa.struct(
                    [
                        ("code", pa.string()),
                        ("display", pa.string()),
                        ("onset", pa.date32()),
                        ("stop", pa.date32()),
                        ("semantic_tag", pa.string()),
                    ]
                )
            ),
        ),
        pa.field(
            "observations",
            pa.list_(
                pa.struct(
                    [
                        ("code", pa.string()),
                        ("display", pa.string()),
                        ("value", pa.string()),
                        ("unit", pa.string()),
                        ("observed_on", pa.date32()),
                        ("kind", pa.string()),
                    ]
                )
            ),
        ),
        pa.field("medications", pa.list_(ITEM)),
        pa.field("allergies", pa.list_(ITEM)),
        pa.field("gold_codes", pa.list_(pa.string())),
        pa.field("gold_displays", pa.list_(pa.string())),
        pa.field("split", pa.string(), nullable=False),
    ]
)


def cases_to_table(cases: list[Case]) -> pa.Table:
    """Cases -> a table of the CASES schema, rows in the given order."""
    return pa.Table.from_pylist([case.model_dump() for case in cases], schema=CASES)


def cases_from_table(table: pa.Table) -> list[Case]:
    """A table of the CASES schema -> Cases (the inverse of `cases_to_table`)."""
    return [Case.model_validate(_unrecorded_reference_sections(row)) for row in table.to_pylist()]


def _unrecorded_reference_sections(row: dict[str, Any]) -> dict[str, Any]:
    """Case sets written before a section could be None hold a reference case's medications and allergies
    as empty lists; the reference format has neither, so they were never read: not recorded, not none."""
    if row["source"] != "reference":
        return row
    return row | {field: row[field] or None for field in ("medications", "allergies")}


# A run's tables (snomed.md, "Outputs"). Every row names the run, the model under test (the clinician),
# the case and the epoch: one interview.
_INTERVIEW_KEY = ("run_id", "model", "case_id", "epoch")
_INTERVIEW_FIELDS = (
    ("run_id", pa.string()),
    ("model", pa.string()),
    ("case_id", pa.string()),
    ("epoch", pa.int32()),
)

# One row per message of an interview in conversation order, every message either role was sent: each
# role's system prompt and the scripted opening (turn 0, no call), each question and answer, the request
# for the final answer, the answer and each re-ask; a failed call is a row with status `failed`. What a
# role was sent in a call is interview.messages_for(role, the rows before the call's): the file replays it.
CONVERSATIONS = Contract(
    name="conversations",
    schema=schema(
        *_INTERVIEW_FIELDS,
        ("message", pa.int32()),  # position in the interview, from 0
        ("turn", pa.int32()),  # the question it belongs to; the final answer and its re-asks follow
        ("role", pa.string()),  # who wrote it: clinician | patient | system | instruction (the benchmark)
        ("sent_to", pa.string()),  # a scripted message's only reader (clinician | patient); else null
        ("speaker", pa.string()),  # the role's model name (the clinician is `model`)
        ("status", pa.string()),  # ok | failed | scripted
        ("text", pa.string()),
        ("leaked_codes", pa.list_(pa.string())),  # gold codes a patient reply gave away
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("latency_s", pa.float64()),
        ("finish_reason", pa.string()),  # 'length': the reply was cut at max_tokens
        ("attempts", pa.int32()),
        ("error", pa.string()),
        ("error_class", pa.string()),
        ("call_key", pa.string()),
    ),
    key=(*_INTERVIEW_KEY, "message"),
    not_null=("status",),
)

# One row per interview: what the clinician answered and how its codes check against the vocabulary.
PREDICTIONS = Contract(
    name="predictions",
    schema=schema(
        *_INTERVIEW_FIELDS,
        # answered | no_answer | unparseable (a final answer that could not be read whole) | failed
        ("status", pa.string()),
        ("final_answer", pa.string()),  # the clinician's last reply, raw
        ("predicted_codes", pa.list_(pa.string())),
        ("invalid_codes", pa.list_(pa.string())),  # not in the vocabulary
        ("malformed_codes", pa.list_(pa.string())),  # invalid and no SNOMED id (length, Verhoeff digit)
        ("not_codes", pa.list_(pa.string())),  # items of the final answer offering no code ("Hypertension")
        ("questions_asked", pa.int32()),
        ("patient_replies", pa.int32()),
        ("leaking_replies", pa.int32()),
        ("error", pa.string()),  # failed: the provider's error; unparseable: what could not be read
        ("error_class", pa.string()),
    ),
    key=_INTERVIEW_KEY,
    not_null=("status", "questions_asked", "patient_replies", "leaking_replies"),
)

# One row per interview: its scores against the gold set; null scores for a `failed` interview.
SCORES = Contract(
    name="scores",
    schema=schema(
        *_INTERVIEW_FIELDS,
        ("status", pa.string()),
        ("gold_codes", pa.list_(pa.string())),
        ("hit_codes", pa.list_(pa.string())),  # predicted and gold
        ("missed_codes", pa.list_(pa.string())),  # gold, not predicted
        ("wrong_codes", pa.list_(pa.string())),  # predicted, not gold
        ("n_gold", pa.int32()),
        ("n_predicted", pa.int32()),
        ("n_correct", pa.int32()),
        ("exact_match", pa.float64()),
        ("precision", pa.float64()),
        ("recall", pa.float64()),
        ("f1", pa.float64()),
        ("empty_gold", pa.bool_()),
    ),
    key=_INTERVIEW_KEY,
    not_null=("status",),
)
