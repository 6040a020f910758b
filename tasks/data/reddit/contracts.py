"""The Reddit source's tables: the raw layer written by the ingest, its seeds and its staging models."""

import pyarrow as pa

from tasks.data.contracts import Contract, schema

# --- raw layer: written by tasks/data/reddit/ingest.py, one folder per dump file ----------------------
# Field names stay those of the dumps; only types are normalised (epoch seconds as int64, flair
# richtext flattened to its text pieces). `source_file`/`source_line` point back at the dump line.

RAW_SUBMISSIONS = Contract(
    "raw_reddit__submissions",
    schema(
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
    schema(
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
    schema(
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
        ("reason", pa.string()),
        ("excerpt", pa.string()),
    ),
    key=("source_file", "source_line"),
)

# --- seeds and staging models (sql/seeds/reddit/, sql/staging/reddit/) ---
# Usernames never get past staging: every `*_pseudonym` column is `u_` + 12 hex of sha256(salt + name).

BOTS = Contract("bots", schema(("username", pa.string())), key=("username",))
"""Known bot accounts, matched case-insensitively."""

HTML_ENTITIES = Contract(
    "html_entities",
    schema(("entity", pa.string()), ("characters", pa.string())),
    key=("entity",),
)
"""Named HTML5 character references (`&nbsp;` -> U+00A0); numeric ones are decoded by the macro."""


STG_REDDIT__SUBMISSIONS = Contract(
    "stg_reddit__submissions",
    schema(
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
    schema(
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
