"""Tables of the consultation benchmark's runs, defined once: every message of an episode, and its scores."""

import pyarrow as pa

from tasks.data.contracts import Contract, schema

_EPISODE_KEY = ("run_id", "model", "case_id", "epoch")
_EPISODE_FIELDS = (
    ("run_id", pa.string()),
    ("model", pa.string()),
    ("case_id", pa.string()),
    ("epoch", pa.int32()),
)

# One row per message in conversation order: the patient's opening (turn 0), each question (agent) and
# the simulator's answer (patient) with the template it matched and the AIUs it revealed, the agent's
# ready line, then its differential and re-asks (stage `diagnosis`), its treatment plan and re-asks
# (`treatment`), then each scripted follow-up (`follow_up`): the patient's row and the agent's answer share
# a turn, a re-ask of a revised plan that did not parse takes the next. A failed call is a row too.
MESSAGES = Contract(
    name="messages",
    schema=schema(
        *_EPISODE_FIELDS,
        ("turn", pa.int32()),
        ("role", pa.string()),  # agent | patient
        ("stage", pa.string()),  # history | diagnosis | treatment | follow_up
        ("follow_up", pa.int32()),  # follow_up rows: the index in the case's follow-up script; else null
        ("status", pa.string()),  # ok | failed | simulated
        ("text", pa.string()),
        ("template", pa.string()),  # patient rows: the template the question matched, or null
        ("revealed", pa.list_(pa.string())),  # patient rows: AIU ids revealed for the first time
        ("deflected", pa.bool_()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("latency_s", pa.float64()),
        ("attempts", pa.int32()),
        ("error", pa.string()),
        ("error_class", pa.string()),
        ("call_key", pa.string()),
    ),
    key=(*_EPISODE_KEY, "turn", "role"),
    not_null=("status",),
)

DIAGNOSIS_ITEM = pa.struct(
    [
        ("rank", pa.int32()),
        ("diagnosis", pa.string()),
        ("icd11", pa.string()),
        ("core", pa.bool_()),
        ("condition_id", pa.string()),  # null: matched no KB condition
        ("match", pa.string()),  # code | exact | fuzzy | unmatched
    ]
)
GOLD_ITEM = pa.struct(
    [("condition_id", pa.string()), ("title", pa.string()), ("core", pa.bool_()), ("severity", pa.int32())]
)
# The history and diagnosis metrics of consult.md (part 1); null where a metric is undefined (POVR with no
# applicable pair, red-flag coverage with no red flag) and for a failed episode.
HISTORY_METRICS = ("mni_comp", "cprw", "ige", "hit_at_1", "povr")
DIAGNOSIS_METRICS = ("core_dx_recall", "core_dx_f1", "swds")
SECONDARY_METRICS = (
    "deflection_rate",
    "red_flag_coverage",
    "top1_accuracy",
    "differential_length",
    "unmatched_rate",
)

# One row per episode: what the agent concluded and every metric of its history and diagnosis stages.
SCORES = Contract(
    name="scores",
    schema=schema(
        *_EPISODE_FIELDS,
        ("department", pa.string()),
        ("difficulty", pa.string()),
        ("status", pa.string()),  # completed | failed
        ("questions", pa.int32()),
        ("diagnosis_parse", pa.string()),  # ok | unparseable (scored as an empty differential)
        ("differential", pa.list_(DIAGNOSIS_ITEM)),
        ("gold", pa.list_(GOLD_ITEM)),
        ("mni_target", pa.list_(pa.string())),
        *((name, pa.float64()) for name in (*HISTORY_METRICS, *DIAGNOSIS_METRICS, *SECONDARY_METRICS)),
        ("error", pa.string()),
        ("error_class", pa.string()),
    ),
    key=_EPISODE_KEY,
    not_null=("status",),
)
