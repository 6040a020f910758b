"""The conversations an export rebuilds are the ones the run sent: on real offline runs, each rebuilt request
hashes to the call key the run recorded (the key is a hash of the messages, tasks/llm/request.py)."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.consult_evaluate import consult_evaluate
from flows.evaluate_models import evaluate_models
from tasks.benchmarks.consult.cases.case_set import write_case_set
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.export import exported_run as consult_export
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.threadmed.export import exported_run as threadmed_export
from tasks.evals.config import ModelSpec
from tests.eval_fixtures import OFFLINE, write_dataset

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


def sent(messages) -> list[dict[str, str]]:
    return [message.model_dump() for message in messages]


def test_threadmed_turn_inputs_are_the_requests_sent(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    evaluate_models(dataset_dir=str(write_dataset(tmp_path / "build")), run_dir=str(run_dir), config=OFFLINE,
                    report=False)  # fmt: skip
    run = threadmed_export(run_dir)
    for role in run.models:
        spec = ModelSpec(name=role.name, model=role.model, api_base=role.api_base, params=role.params)
        samples = run.samples[role.name]
        assert len(samples) == 23  # 13 baseline and 10 oracle turns of the 3 test threads
        assert [spec.request(sent(s.input)).key() for s in samples] == [
            s.metadata["call_key"] for s in samples
        ]


def test_a_consult_conversation_is_the_last_request_sent(tmp_path: Path) -> None:
    settings = CaseGenerationSettings(n=2, seed=1)
    cases_dir = write_case_set(generate_cases(load_kb(), settings), tmp_path / "cases", settings)
    run_dir = tmp_path / "run"
    consult_evaluate(cases_dir=str(cases_dir), run_dir=str(run_dir), models=["threadmed/consult-exhaustive"],
                     report=False)  # fmt: skip
    run = consult_export(run_dir)
    (role,) = run.models
    spec = ModelSpec(name=role.name, model=role.model, params=role.params)
    last_calls = {}
    for row in pq.read_table(run_dir / "messages.parquet").to_pylist():
        if row["role"] == "agent":
            last_calls[row["case_id"]] = row["call_key"]  # the table is sorted by turn
    samples = run.samples[role.name]
    assert len(samples) == 2 and all(s.metadata["prompt_version"] for s in samples)
    rebuilt = {
        s.item_id: spec.request(
            sent(s.messages[:-1]), s.metadata["prompt_version"], scope=f"consult/agent/{s.item_id}"
        ).key()
        for s in samples
    }
    assert rebuilt == last_calls
