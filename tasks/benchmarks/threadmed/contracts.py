"""ThReadMed-QA's tables: its seeds, intermediate models and marts, the published dataset, run outputs."""

import pyarrow as pa

from tasks.data.contracts import Contract, schema

# --- published dataset: dataset/{full,answered}/ (see shared/spec/dataset.md, "Outputs") ---------------

THREADS = Contract(
    "threads",
    schema(
        ("thread_id", pa.string()),
        ("created_utc", pa.timestamp("us", tz="UTC")),
        ("op", pa.string()),
        ("n_questions", pa.int64()),
        ("n_answered", pa.int64()),
        ("n_orphans", pa.int64()),
        ("stratum", pa.string()),
        ("split", pa.string()),
        ("jaccard", pa.float64()),
    ),
    key=("thread_id",),
    not_null=("created_utc", "op", "stratum", "split"),
)

QA_PAIRS = Contract(
    "qa_pairs",
    schema(
        ("thread_id", pa.string()),
        ("turn", pa.int64()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("answer_id", pa.string()),
        ("answer", pa.string()),
        ("physician", pa.string()),
        ("physician_flair", pa.string()),
        ("asked_utc", pa.timestamp("us", tz="UTC")),
        ("answered_utc", pa.timestamp("us", tz="UTC")),
    ),
    key=("thread_id", "turn"),
    not_null=("question_id", "question", "asked_utc"),
    references={"thread_id": "threads.thread_id"},
)

# --- evaluation run directory (see shared/spec/evaluation.md) -----------------------------------------
# status / parse_status values: responses 'ok' | 'failed' | 'not_run';
# judgments 'ok' | 'unparseable' | 'judge_cut' (the judge's last reply was cut at its max_tokens) | 'failed' |
# 'not_run' | 'truncated' (an answer cut at max_tokens, unjudged when the config says `truncated: mark`). A
# score is null unless parse_status = 'ok'.

RESPONSES = Contract(
    "responses",
    schema(
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("condition", pa.string()),
        ("thread_id", pa.string()),
        ("turn", pa.int64()),
        ("status", pa.string()),
        ("response", pa.string()),
        ("finish_reason", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("input_cost_usd", pa.float64()),
        ("output_cost_usd", pa.float64()),
        ("latency_s", pa.float64()),
        ("attempts", pa.int64()),
        ("error", pa.string()),
        ("error_class", pa.string()),
        ("provider_response_id", pa.string()),
        ("call_key", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("finished_at", pa.timestamp("us", tz="UTC")),
    ),
    key=("run_id", "model", "condition", "thread_id", "turn"),
)

JUDGMENTS = Contract(
    "judgments",
    schema(
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("condition", pa.string()),
        ("thread_id", pa.string()),
        ("turn", pa.int64()),
        ("judge_model", pa.string()),
        ("rubric_version", pa.string()),
        ("score", pa.float64()),
        ("reason", pa.string()),
        ("parse_status", pa.string()),
        ("raw_reply", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("attempts", pa.int64()),
        ("error", pa.string()),
        ("call_key", pa.string()),
    ),
    key=("run_id", "model", "condition", "thread_id", "turn"),
)

# --- warehouse: seeds, intermediate models and marts (sql/*/threadmed/, see tasks/data/warehouse.py) ---
# One contract per model, named after the model's table; the published marts full_/answered_{threads,
# qa_pairs} are the two variants of the models threads and qa_pairs and use THREADS and QA_PAIRS above.

FLAIR_ROLES = Contract(
    "flair_roles",
    schema(("pattern", pa.string()), ("role", pa.string()), ("priority", pa.int64())),
    key=("pattern",),
)
"""Case-insensitive RE2 patterns over flair text; among the patterns a flair matches, the highest
priority gives its role (so 'Physician Assistant' outranks 'Physician')."""


IMAGE_DOMAINS = Contract("image_domains", schema(("domain", pa.string())), key=("domain",))
"""Hosts of images and videos: a non-self post linking there with no text is image-only."""

LENGTH_STRATA = Contract(
    "length_strata",
    schema(("stratum", pa.string()), ("min_pairs", pa.int64()), ("max_pairs", pa.int64())),
    key=("stratum",),
)
"""Thread length strata by number of QA pairs, inclusive bounds; a null max_pairs is unbounded."""

INT_POSTS__FILTERED = Contract(
    "int_posts__filtered",
    schema(
        ("submission_id", pa.string()),
        ("author_pseudonym", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("count_question_words", pa.int64()),
        ("count_comments", pa.int64()),
        ("drop_reason", pa.string()),
        ("is_kept", pa.bool_()),
    ),
    key=("submission_id",),
)

INT_COMMENTS__CLASSIFIED = Contract(
    "int_comments__classified",
    schema(
        ("comment_id", pa.string()),
        ("submission_id", pa.string()),
        ("parent_comment_id", pa.string()),
        ("is_top_level", pa.bool_()),
        ("author_pseudonym", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("flair_text", pa.string()),
        ("flair_role", pa.string()),
        ("comment_class", pa.string()),
        ("drop_reason", pa.string()),
        ("answer_defect", pa.string()),
    ),
    key=("comment_id",),
)

INT_PATHS__ENUMERATED = Contract(
    "int_paths__enumerated",
    schema(
        ("submission_id", pa.string()),
        ("path_id", pa.string()),
        ("position", pa.int64()),
        ("comment_id", pa.string()),
        ("comment_class", pa.string()),
    ),
    key=("path_id", "position"),
)

INT_PATHS__SCREENED = Contract(
    "int_paths__screened",
    schema(
        ("submission_id", pa.string()),
        ("path_id", pa.string()),
        ("branch_id", pa.string()),
        ("count_kept_comments", pa.int64()),
        ("count_questions", pa.int64()),
        ("discard_reason", pa.string()),
        ("is_kept", pa.bool_()),
    ),
    key=("path_id",),
)

INT_TURNS__LINEARISED = Contract(
    "int_turns__linearised",
    schema(
        ("submission_id", pa.string()),
        ("branch_id", pa.string()),
        ("turn", pa.int64()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("asked_at", pa.timestamp("us", tz="UTC")),
        ("answer_id", pa.string()),
        ("answer", pa.string()),
        ("answerer_pseudonym", pa.string()),
        ("answerer_flair", pa.string()),
        ("answered_at", pa.timestamp("us", tz="UTC")),
    ),
    key=("branch_id", "turn"),
)

INT_BRANCHES__SELECTED = Contract(
    "int_branches__selected",
    schema(
        ("submission_id", pa.string()),
        ("branch_id", pa.string()),
        ("jaccard", pa.float64()),
        ("count_answered", pa.int64()),
        ("count_questions", pa.int64()),
        ("last_comment_at", pa.timestamp("us", tz="UTC")),
        ("selection_rank", pa.int64()),
        ("is_selected", pa.bool_()),
    ),
    key=("branch_id",),
)

INT_THREADS__ASSEMBLED = Contract(
    "int_threads__assembled",
    schema(
        ("thread_id", pa.string()),
        ("branch_id", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("op_pseudonym", pa.string()),
        ("count_questions", pa.int64()),
        ("count_answered", pa.int64()),
        ("count_orphans", pa.int64()),
        ("jaccard", pa.float64()),
        ("split", pa.string()),
        ("count_answered_turns", pa.int64()),
        ("answered_drop_reason", pa.string()),
    ),
    key=("thread_id",),
)

STATS_FUNNEL = Contract(
    "stats_funnel",
    schema(
        ("stage_order", pa.int64()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("count_rows", pa.int64()),
    ),
    key=("stage", "reason"),
    nullable_key=("reason",),
)
"""A stage's row with a null reason is its total."""

# --- clinician ratings: a labels folder (`threadmed labels sample/import`, threadmed/labels/) ---
# The sampled turns of one run, with what the rating page hides (the model, the judge's grade).

LABEL_ITEMS = Contract(
    "label_items",
    schema(
        ("item_id", pa.string()),  # opaque and stable: a hash of run id, model, condition, thread and turn
        ("position", pa.int64()),  # order on the rating page (seeded shuffle)
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("condition", pa.string()),
        ("thread_id", pa.string()),
        ("turn", pa.int64()),
        ("turn_group", pa.string()),  # metrics.TURN_GROUPS' name of the turn
        ("judge_score", pa.float64()),  # the sampled run's judge's grade (0, 0.5, 1)
        ("answer_words", pa.int64()),
        ("stratum", pa.string()),  # "<turn group>|<model>|<judge grade>"
    ),
    key=("item_id",),
    not_null=("position", "run_id", "model", "condition", "thread_id", "turn", "turn_group", "stratum"),
)

# One grade per rater and item, as imported from the rating page's CSV (or a simulated rater's).
RATINGS = Contract(
    "ratings",
    schema(
        ("item_id", pa.string()),
        ("rater", pa.string()),
        ("rater_kind", pa.string()),  # clinician | simulated
        ("grade", pa.float64()),  # the rubric's scale: 0, 0.5, 1
        ("note", pa.string()),
        ("rated_at", pa.timestamp("us", tz="UTC")),
        ("source_file", pa.string()),
    ),
    key=("item_id", "rater"),
    not_null=("rater_kind", "grade", "source_file"),
    references={"item_id": "label_items.item_id"},
)
