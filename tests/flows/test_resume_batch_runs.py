import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from flows.resume_batch_runs import resume_batch_runs
from flows.snomed_oracle_data import snomed_oracle_data
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.evals.config import BatchSettings, ModelSpec
from tests.llm_server import LLMServer
from tests.snomed_fixtures import write_case_set

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


def unsure_teacher(model: str, messages: list[dict]) -> str:
    """A teacher whose every answer is unsure: kept for the negative pairs, rejected for the positive ones."""
    return json.dumps({"question": "Have you noticed anything like that?", "answer": "I'm not sure."})


def test_an_oracle_data_run_left_waiting_on_its_batches_is_finished_by_the_poller(tmp_path):
    cases = write_case_set(tmp_path / "cases")
    out = tmp_path / "runs" / "oracle"
    with LLMServer(reply=unsure_teacher, batch_delay_s=3600) as llm:
        teacher = ModelSpec(name="teacher", model="openai/teacher", api_base=llm.url, mode="batch")
        config = OracleDataConfig(models=[teacher], batch=BatchSettings(wait_s=0, poll_interval_s=0.02))
        waiting = snomed_oracle_data(cases_dir=str(cases), out_dir=str(out), config=config, return_state=True)
        assert waiting.name == "AwaitingBatches"
        llm.finish_batches()
        polls = [resume_batch_runs(runs_dir=str(tmp_path / "runs"))]
        polls.append(resume_batch_runs(runs_dir=str(tmp_path / "runs")))
        stats = llm.stats()
    assert [{run: outcome.split(":")[0] for run, outcome in poll.items()} for poll in polls] == [
        {str(out): "finished"},
        {},
    ]
    pairs = pq.read_table(out / "oracle_pairs.parquet").to_pylist()
    # Every teacher call went once through a batch and none alone; the data folder was written by the poll.
    assert (stats["requests"], stats["batch_requests"], stats["max_submissions_per_custom_id"]) == (
        0,
        len(pairs),
        1,
    )
    assert Counter((pair["kind"], pair["status"]) for pair in pairs) == {
        ("positive", "rejected"): 3,
        ("negative", "kept"): 6,
    }
    assert {path.name for path in (out / "chat").iterdir()} == {
        "train.jsonl",
        "validation.jsonl",
        "test.jsonl",
    }
