"""The Prefect context sent with each task submitted to Dask: serialized once while the contexts are the same
objects, whole and as Prefect's own `serialize_context` gives it (tasks/core/dask_runner.py)."""

from uuid import uuid4

import prefect
import pytest
from prefect import context as prefect_context
from prefect import task

from tasks.core import dask_runner


@task
def a_task(x: int) -> int:
    return x


@pytest.fixture
def serializations(monkeypatch) -> list[int]:
    """Counts how often Prefect's own `serialize_context` runs (one entry a run); starts from no memory."""
    runs: list[int] = []
    original = prefect_context.serialize_context

    def counted(*arguments, **options):
        runs.append(1)
        return original(*arguments, **options)

    monkeypatch.setattr(prefect_context, "serialize_context", counted)
    monkeypatch.setattr(dask_runner, "_last", None)
    return runs


def asset_kwargs() -> dict:
    return {"task": a_task, "task_run_id": uuid4(), "task_inputs": {"x": set()}, "copy_to_child_ctx": True}


def test_the_context_is_prefect_s_own_and_serialized_once_while_the_same(serializations):
    first, second = asset_kwargs(), asset_kwargs()
    expected = [prefect_context.serialize_context(kwargs) for kwargs in (first, second)]
    serializations.clear()
    assert [dask_runner.serialize_context_once(kwargs) for kwargs in (first, second)] == expected
    assert serializations == [1]


def test_a_context_that_changes_is_serialized_again(serializations):
    outside = dask_runner.serialize_context_once()
    with prefect.tags("nightly"):
        tagged = dask_runner.serialize_context_once()
        expected_tagged = prefect_context.serialize_context()
    again = dask_runner.serialize_context_once()
    assert (tagged, again) == (expected_tagged, outside)
    assert tagged["tags_context"] != outside["tags_context"]
    assert len(serializations) == 4  # outside, in the tags block (and the expected one), outside again
