"""Tables of an oracle-data run: the teacher's replies (one per pair asked) and the pairs as validated."""

import pyarrow as pa

from tasks.data.contracts import Contract, schema

_PAIR_FIELDS = (
    ("run_id", pa.string()),
    ("model", pa.string()),  # the teacher's name
    ("case_id", pa.string()),
    ("epoch", pa.int32()),  # always 0: one pair per topic
    ("topic_index", pa.int32()),  # the pair's place among the case's topics
    ("kind", pa.string()),  # positive | negative
    ("subject", pa.string()),  # condition | observation
    ("topic", pa.string()),  # condition code, observation kind, or the absent condition's code
    ("split", pa.string()),  # train | validation | test (by patient)
)
_PAIR_KEY = ("run_id", "case_id", "topic_index")
# A call's outcome as solver.call_columns gives it (the oracle data's and the patient bench's tables).
CALL_FIELDS = (
    ("status", pa.string()),  # ok | failed
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("latency_s", pa.float64()),
    ("finish_reason", pa.string()),
    ("attempts", pa.int32()),
    ("error", pa.string()),
    ("error_class", pa.string()),
    ("call_key", pa.string()),
)

# One row per teacher call: its raw reply, or the failure.
TEACHER_REPLIES = Contract(
    name="teacher_replies",
    schema=schema(
        *_PAIR_FIELDS,
        ("text", pa.string()),
        *CALL_FIELDS,
    ),
    key=_PAIR_KEY,
    not_null=("status",),
)

# One row per pair asked: kept, rejected (with the reason) or failed (the call failed: a re-run retries it).
ORACLE_PAIRS = Contract(
    name="oracle_pairs",
    schema=schema(
        *_PAIR_FIELDS,
        ("status", pa.string()),  # kept | rejected | failed
        ("reason", pa.string()),  # validation.RejectReason of a rejected pair
        ("is_kept", pa.bool_()),  # null when the call failed
        ("question", pa.string()),
        ("answer", pa.string()),
    ),
    key=_PAIR_KEY,
    not_null=("status",),
)
