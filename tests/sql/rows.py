"""Builders of hand-written input rows for the SQL tests.

Each builder returns one row of a model's input table with defaults that pass every rule, so a test only
spells out what it is about. Timestamps are epoch seconds in raw rows and aware datetimes elsewhere.
"""

from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.data.contracts import Contract
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT

SALT = DEFAULT_SALT
T0 = 1_600_000_000  # 2020-09-13 12:26:40 UTC, inside the default window
QUESTION_TITLE = "Dry cough for three weeks"
QUESTION_BODY = "I have had a dry cough for three weeks and no fever. Should I worry?"
ANSWER = "A cough lasting three weeks without fever is often post-viral, but see your doctor."

Row = dict[str, Any]


def pseudonym(username: str, salt: str = SALT) -> str:
    """The published pseudonym of a username, computed independently of the SQL macro."""
    return "u_" + sha256((salt + username).encode()).hexdigest()[:12]


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def raw_submission(submission_id: str, **fields: Any) -> Row:
    return {
        "id": submission_id,
        "subreddit": "AskDocs",
        "author": "alice",
        "title": QUESTION_TITLE,
        "selftext": QUESTION_BODY,
        "created_utc": T0,
        "is_self": True,
        "domain": "self.AskDocs",
        "retrieved_utc": T0 + 86_400,
        "source_file": "RS_2020-09.zst",
        "source_line": 1,
        **fields,
    }


def raw_comment(comment_id: str, parent: str | None = None, post: str = "p1", **fields: Any) -> Row:
    """A comment replying to comment `parent`, or to the post when `parent` is None."""
    return {
        "id": comment_id,
        "subreddit": "AskDocs",
        "link_id": f"t3_{post}",
        "parent_id": f"t1_{parent}" if parent else f"t3_{post}",
        "author": "dr_smith",
        "body": ANSWER,
        "created_utc": T0 + 60,
        "author_flair_text": "Physician",
        "retrieved_utc": T0 + 86_400,
        "source_file": "RC_2020-09.zst",
        "source_line": 1,
        **fields,
    }


def stg_submission(submission_id: str, **fields: Any) -> Row:
    return {
        "submission_id": submission_id,
        "subreddit": "AskDocs",
        "author_pseudonym": pseudonym("alice"),
        "is_bot_author": False,
        "title": QUESTION_TITLE,
        "selftext": QUESTION_BODY,
        "is_selftext_removed": False,
        "created_at": at(T0),
        "is_self": True,
        "domain": "self.askdocs",
        "is_gallery": False,
        "is_video": False,
        "is_banned": False,
        "retrieved_at": at(T0 + 86_400),
        "source_file": "RS_2020-09.zst",
        "source_line": 1,
        "count_duplicates": 0,
        **fields,
    }


def stg_comment(comment_id: str, parent: str | None = None, post: str = "p1", **fields: Any) -> Row:
    return {
        "comment_id": comment_id,
        "submission_id": post,
        "parent_comment_id": parent,
        "is_top_level": parent is None,
        "subreddit": "AskDocs",
        "author_pseudonym": pseudonym("dr_smith"),
        "is_bot_author": False,
        "body": ANSWER,
        "is_body_removed": False,
        "flair_text": "Physician",
        "created_at": at(T0 + 60),
        "is_banned": False,
        "retrieved_at": at(T0 + 86_400),
        "source_file": "RC_2020-09.zst",
        "source_line": 1,
        "count_duplicates": 0,
        **fields,
    }


def classified_comment(
    comment_id: str, comment_class: str, parent: str | None = None, post: str = "p1", **fields: Any
) -> Row:
    """An int_comments__classified row; OP comments are alice's, answers dr_smith's."""
    is_op = comment_class == "op"
    return {
        "comment_id": comment_id,
        "submission_id": post,
        "parent_comment_id": parent,
        "is_top_level": parent is None,
        "author_pseudonym": pseudonym("alice" if is_op else "dr_smith"),
        "created_at": at(T0 + 60),
        "flair_text": None if is_op else "Physician",
        "flair_role": None if is_op else "physician",
        "comment_class": comment_class,
        **fields,
    }


def write_parquet(path: Path, contract: Contract, rows: list[Row]) -> str:
    """Write rows as a Parquet file with the contract's schema (missing columns are null)."""
    table = pa.Table.from_pylist(
        [{c: row.get(c) for c in contract.columns} for row in rows], schema=contract.schema
    )
    pq.write_table(table, path)
    return str(path)
