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
        ("finish_reason", pa.string()),  # 'length': the reply was cut at max_tokens
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
PLAN_ITEM = pa.struct(
    [
        ("drug", pa.string()),  # as the agent wrote it
        ("generic", pa.string()),  # the KB generic name; null: no KB drug matched
        ("dose", pa.float64()),
        ("unit", pa.string()),
        ("frequency_per_day", pa.float64()),
        ("days", pa.float64()),
        ("route", pa.string()),
    ]
)
# A finding of the safety critic (critic.py `Violation`): the KB entry that fired and that entry's source.
VIOLATION = pa.struct(
    [
        ("kind", pa.string()),
        ("severity", pa.string()),  # hard (fails PSC) | soft
        ("drug", pa.string()),
        ("other", pa.string()),  # the other drug of an interaction
        ("entry", pa.string()),
        ("source", pa.string()),
        ("detail", pa.string()),
    ]
)
# One scripted follow-up as it went: what the patient said, the answer, the revision, the critic on the plan
# in force after it (under the facts known by then) and the judge's verdict on the answer.
FOLLOW_UP = pa.struct(
    [
        ("index", pa.int32()),  # in the case's follow-up script
        ("kind", pa.string()),  # constraint | question
        ("text", pa.string()),
        ("constraint", pa.string()),
        ("core", pa.bool_()),  # a core concern: weighs 2 in FQR
        ("answer", pa.string()),
        # ok | unparseable (a revision that did not parse: no plan in force can be read until one parses)
        ("revision_parse", pa.string()),
        ("revised_plan", pa.list_(PLAN_ITEM)),  # null: no revision that parsed
        # KB drugs of the plan in force after this follow-up, and the critic on it; null: that plan is unread
        ("plan_drugs", pa.list_(pa.string())),
        ("violations_after", pa.list_(VIOLATION)),
        ("correct", pa.bool_()),  # the judge's verdict; null unless judge_status is ok
        # ok | unparseable | judge_cut (the judge's last reply cut at its max_tokens) | failed | truncated (an
        # answer cut at max_tokens, left unjudged when the config says `truncated: mark`)
        ("judge_status", pa.string()),
        ("judge_reason", pa.string()),
    ]
)
# The primary metrics of consult.md by stage (the composite averages them stage by stage), and the ten
# secondary ones; null where a metric is undefined (POVR with no applicable pair, DDIV with no drug pair,
# DCSR with no constraint follow-up...) and for a failed episode. metrics.py and metrics_plan.py define them.
HISTORY_METRICS = ("mni_comp", "cprw", "ige", "hit_at_1", "povr")
DIAGNOSIS_METRICS = ("core_dx_recall", "core_dx_f1", "swds")
TREATMENT_METRICS = ("psc", "ddiv", "pcr")
FOLLOW_UP_METRICS = ("fqr", "dcsr")
STAGE_METRICS = {
    "history": HISTORY_METRICS,
    "diagnosis": DIAGNOSIS_METRICS,
    "treatment": TREATMENT_METRICS,
    "follow_up": FOLLOW_UP_METRICS,
}
PRIMARY_METRICS = (*HISTORY_METRICS, *DIAGNOSIS_METRICS, *TREATMENT_METRICS, *FOLLOW_UP_METRICS)
SECONDARY_METRICS = (
    "questions",
    "deflection_rate",
    "red_flag_coverage",
    "top1_accuracy",
    "differential_length",
    "unmatched_rate",
    "plan_completeness",
    "regimen_coverage",
    "dose_error_rate",
    "needless_churn",
)

# One row per episode: what the agent concluded and prescribed, how the follow-ups went, and every metric.
SCORES = Contract(
    name="scores",
    schema=schema(
        *_EPISODE_FIELDS,
        ("department", pa.string()),
        ("difficulty", pa.string()),
        ("status", pa.string()),  # completed | failed
        ("diagnosis_parse", pa.string()),  # ok | unparseable (its metrics score the worst)
        ("differential", pa.list_(DIAGNOSIS_ITEM)),
        ("gold", pa.list_(GOLD_ITEM)),
        ("mni_target", pa.list_(pa.string())),
        ("plan_parse", pa.string()),  # ok | unparseable (its metrics score the worst)
        ("plan", pa.list_(PLAN_ITEM)),  # the first plan; null: unparseable
        ("plan_advice", pa.string()),
        ("violations", pa.list_(VIOLATION)),  # the critic on the first plan; null: unparseable
        ("follow_ups", pa.list_(FOLLOW_UP)),
        ("revisions_unparseable", pa.int32()),  # follow-up answers whose revised plan did not parse
        # What a parser raised on a reply it then left unparseable, "<stage>: <error>" (a parser bug).
        ("parse_errors", pa.list_(pa.string())),
        ("judge_model", pa.string()),  # the FQR judge
        ("rubric_version", pa.string()),
        # The judge's calls for this episode, re-asks and failed ones included (null: no judge was asked).
        ("judge_calls", pa.int32()),
        ("judge_prompt_tokens", pa.int64()),
        ("judge_completion_tokens", pa.int64()),
        ("judge_cost_usd", pa.float64()),
        ("fqr_judged", pa.int32()),  # follow-ups the judge graded (FQR's denominator, unweighted)
        ("fqr_unparseable", pa.int32()),  # follow-ups whose grade did not parse: excluded from FQR
        *((name, pa.float64()) for name in PRIMARY_METRICS),
        *((name, pa.int32() if name == "questions" else pa.float64()) for name in SECONDARY_METRICS),
        ("composite", pa.float64()),  # the episode's four stage scores averaged; null unless all are defined
        ("error", pa.string()),
        ("error_class", pa.string()),
    ),
    key=_EPISODE_KEY,
    not_null=("status",),
)
