"""Publish report tables and Markdown as Prefect artifacts (call from inside a task or a flow)."""

from collections.abc import Iterable, Sequence
from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from tasks.core.provenance import artifact_key, folder_tag
from tasks.report.tables import Table, table_records


def publish_tables(tables: Iterable[Table], prefix: str) -> list[str]:
    """One table artifact per table with rows, keyed `<prefix>-<table key>`; returns the keys."""
    keys = []
    for table in tables:
        if table.rows:
            key = artifact_key(prefix, table.key)
            create_table_artifact(
                table=table_records(table), key=key, description=f"{table.title}. {table.caption}"
            )
            keys.append(key)
    return keys


def publish_markdown(markdown: str, key: str, description: str) -> str:
    """One Markdown artifact under `key` (an `artifact_key`); returns the key."""
    create_markdown_artifact(markdown=markdown, key=key, description=description)
    return key


def publish_report(tables: Iterable[Table], markdown: str, prefix: str, description: str) -> list[str]:
    """A report's tables (`publish_tables`) and its report.md as `<prefix>-summary`; returns every key."""
    return [
        *publish_tables(tables, prefix),
        publish_markdown(markdown, artifact_key(prefix, "summary"), description),
    ]


def report_prefix(kind: str, run_ids: Sequence[str], report_dir: str | Path) -> str:
    """The key prefix of a report's artifacts: its kind, its first run id (and how many more runs), and its
    folder's tag, so that reports written to two folders never write over each other's artifacts (two run
    folders of the same settings share a run id), while a report written again adds versions to its keys."""
    more = [f"and-{len(run_ids) - 1}-more"] if len(run_ids) > 1 else []
    return artifact_key(kind, *run_ids[:1], *more, folder_tag(report_dir))
