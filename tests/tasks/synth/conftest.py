"""Dumps generated once per session at small scale, in both layouts, for the generator's tests."""

from pathlib import Path

import pytest

from tasks.synth.generator import generate_dumps
from tests.tasks.synth.dump_files import MONTHLY_POSTS, POSTS, SEED, read_records


@pytest.fixture(scope="session")
def subreddit_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("subreddit")
    generate_dumps(out, POSTS, SEED)
    return out


@pytest.fixture(scope="session")
def monthly_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("monthly")
    generate_dumps(out, MONTHLY_POSTS, SEED, layout="monthly")
    return out


@pytest.fixture(scope="session")
def submissions(subreddit_dump: Path) -> list[dict]:
    return read_records(subreddit_dump / "AskDocs_submissions.zst")


@pytest.fixture(scope="session")
def comments(subreddit_dump: Path) -> list[dict]:
    return read_records(subreddit_dump / "AskDocs_comments.zst")
