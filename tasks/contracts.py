"""Every table's columns, types and key, defined once.

SQL models name their contract in their header; tests check what was built against it. Schemas are
pyarrow schemas so that Parquet writers, DuckDB and the tests share one definition.
"""

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Contract:
    """A table's name, schema and key (the columns that identify a row)."""

    name: str
    schema: pa.Schema
    key: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return self.schema.names


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, dtype) for name, dtype in fields])


# --- raw layer: written by tasks/data/reddit/ingest.py, one folder per dump file ----------------------
# Field names stay those of the dumps; only types are normalised (epoch seconds as int64, flair
# richtext flattened to its text pieces). `source_file`/`source_line` point back at the dump line.

RAW_SUBMISSIONS = Contract(
    "raw_reddit__submissions",
    _schema(
        ("id", pa.string()),
        ("subreddit", pa.string()),
        ("author", pa.string()),
        ("title", pa.string()),
        ("selftext", pa.string()),
        ("created_utc", pa.int64()),
        ("is_self", pa.bool_()),
        ("domain", pa.string()),
        ("url", pa.string()),
        ("post_hint", pa.string()),
        ("is_gallery", pa.bool_()),
        ("is_video", pa.bool_()),
        ("removed_by_category", pa.string()),
        ("banned_by", pa.string()),
        ("banned_at_utc", pa.int64()),
        ("distinguished", pa.string()),
        ("stickied", pa.bool_()),
        ("num_comments", pa.int64()),
        ("score", pa.int64()),
        ("author_flair_text", pa.string()),
        ("author_flair_richtext_text", pa.string()),
        ("link_flair_text", pa.string()),
        ("edited_utc", pa.int64()),
        ("retrieved_utc", pa.int64()),
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
    ),
    key=("source_file", "source_line"),
)

RAW_COMMENTS = Contract(
    "raw_reddit__comments",
    _schema(
        ("id", pa.string()),
        ("subreddit", pa.string()),
        ("link_id", pa.string()),
        ("parent_id", pa.string()),
        ("author", pa.string()),
        ("body", pa.string()),
        ("created_utc", pa.int64()),
        ("distinguished", pa.string()),
        ("stickied", pa.bool_()),
        ("is_submitter", pa.bool_()),
        ("banned_by", pa.string()),
        ("removed_by_category", pa.string()),
        ("author_flair_text", pa.string()),
        ("author_flair_richtext_text", pa.string()),
        ("score", pa.int64()),
        ("edited_utc", pa.int64()),
        ("retrieved_utc", pa.int64()),
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
    ),
    key=("source_file", "source_line"),
)

RAW_REJECTS = Contract(
    "raw_reddit__rejects",
    _schema(
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
        ("reason", pa.string()),
        ("excerpt", pa.string()),
    ),
    key=("source_file", "source_line"),
)

# --- published dataset: dataset/{full,answered}/ (see shared/spec/dataset.md, "Outputs") ---------------

THREADS = Contract(
    "threads",
    _schema(
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
)

QA_PAIRS = Contract(
    "qa_pairs",
    _schema(
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
)

# --- evaluation run directory (see shared/spec/evaluation.md) -----------------------------------------
# status / parse_status values: responses 'ok' | 'failed' | 'not_run';
# judgments 'ok' | 'unparseable' | 'failed' | 'not_run'. A score is null unless parse_status = 'ok'.

RESPONSES = Contract(
    "responses",
    _schema(
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
    _schema(
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

# --- warehouse models (staging, intermediate, marts) ---
# Tables built by sql/ (see tasks/data/warehouse.py): seeds, then one contract per model, named after the
# model's table. The published marts full_/answered_{threads,qa_pairs} use THREADS and QA_PAIRS above.
# Usernames never get past staging: every `*_pseudonym` column is `u_` + 12 hex of sha256(salt + name).

FLAIR_ROLES = Contract(
    "flair_roles",
    _schema(("pattern", pa.string()), ("role", pa.string()), ("priority", pa.int64())),
    key=("pattern",),
)
"""Case-insensitive RE2 patterns over flair text; among the patterns a flair matches, the highest
priority gives its role (so 'Physician Assistant' outranks 'Physician')."""

BOTS = Contract("bots", _schema(("username", pa.string())), key=("username",))
"""Known bot accounts, matched case-insensitively."""

IMAGE_DOMAINS = Contract("image_domains", _schema(("domain", pa.string())), key=("domain",))
"""Hosts of images and videos: a non-self post linking there with no text is image-only."""

HTML_ENTITIES = Contract(
    "html_entities",
    _schema(("entity", pa.string()), ("characters", pa.string())),
    key=("entity",),
)
"""Named HTML5 character references (`&nbsp;` -> U+00A0); numeric ones are decoded by the macro."""

LENGTH_STRATA = Contract(
    "length_strata",
    _schema(("stratum", pa.string()), ("min_pairs", pa.int64()), ("max_pairs", pa.int64())),
    key=("stratum",),
)
"""Thread length strata by number of QA pairs, inclusive bounds; a null max_pairs is unbounded."""

STG_REDDIT__SUBMISSIONS = Contract(
    "stg_reddit__submissions",
    _schema(
        ("submission_id", pa.string()),
        ("subreddit", pa.string()),
        ("author_pseudonym", pa.string()),
        ("is_bot_author", pa.bool_()),
        ("title", pa.string()),
        ("selftext", pa.string()),
        ("is_selftext_removed", pa.bool_()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("is_self", pa.bool_()),
        ("domain", pa.string()),
        ("post_hint", pa.string()),
        ("is_gallery", pa.bool_()),
        ("is_video", pa.bool_()),
        ("removed_by_category", pa.string()),
        ("is_banned", pa.bool_()),
        ("retrieved_at", pa.timestamp("us", tz="UTC")),
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
        ("count_duplicates", pa.int64()),
    ),
    key=("submission_id",),
)

STG_REDDIT__COMMENTS = Contract(
    "stg_reddit__comments",
    _schema(
        ("comment_id", pa.string()),
        ("submission_id", pa.string()),
        ("parent_comment_id", pa.string()),
        ("is_top_level", pa.bool_()),
        ("subreddit", pa.string()),
        ("author_pseudonym", pa.string()),
        ("is_bot_author", pa.bool_()),
        ("body", pa.string()),
        ("is_body_removed", pa.bool_()),
        ("flair_text", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("distinguished", pa.string()),
        ("removed_by_category", pa.string()),
        ("is_banned", pa.bool_()),
        ("retrieved_at", pa.timestamp("us", tz="UTC")),
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
        ("count_duplicates", pa.int64()),
    ),
    key=("comment_id",),
)

INT_POSTS__FILTERED = Contract(
    "int_posts__filtered",
    _schema(
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
    _schema(
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
    _schema(
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
    _schema(
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
    _schema(
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
    _schema(
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
    _schema(
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
    _schema(
        ("stage_order", pa.int64()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("count_rows", pa.int64()),
    ),
    key=("stage", "reason"),
)
