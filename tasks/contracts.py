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


# --- raw layer: written by tasks/ingest.py, one folder per dump file ---------------------------------
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
