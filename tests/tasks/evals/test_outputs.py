import json
from importlib import metadata
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.threadmed.contracts import RESPONSES
from tasks.core.provenance import settings_sha256
from tasks.evals.config import EvalConfig, EvaluationSettings, ModelSpec
from tasks.evals.outputs import GroupSummary, RunSummary, write_manifest, write_table
from tasks.evals.plan import RunPlan

TRANSIENT_FAILURES = {"rate_limit": 2, "timeout": 1}
PERMANENT_FAILURES = {"authentication": 1, "context_length": 2, "not_found": 1}
KEPT = "(completed calls are kept)"
FIX_KEY = (
    "[authentication] set the provider's key variable (e.g. OPENAI_API_KEY) or `api_key_env` in the config"
)
FIX_CONTEXT = (
    "[context length] the conversation exceeds the model's context window; use a longer-context model"
)
FIX_MODEL = "[not found] check the litellm model string (provider/model) and api_base"


@pytest.mark.parametrize(
    ("failed_calls", "message"),
    [
        (
            TRANSIENT_FAILURES,
            f"3 calls failed: rate limit 2, timeout 1; re-run the same command to finish {KEPT}",
        ),
        (
            PERMANENT_FAILURES,
            "4 calls failed: authentication 1, context length 2, not found 1. A re-run alone will not help;"
            f" fix first: {FIX_KEY}; {FIX_CONTEXT}; {FIX_MODEL}. Then re-run the same command {KEPT}",
        ),
        (
            {"content_filter": 1},
            "1 call failed: content filter 1. A re-run alone will not help; fix first: [content filter] the"
            " provider refuses this content; only another model or provider can answer it."
            f" Then re-run the same command {KEPT}",
        ),
        (
            {**TRANSIENT_FAILURES, "authentication": 1},
            "4 calls failed: authentication 1, rate limit 2, timeout 1. Re-run the same command to retry the"
            f" rate limit and timeout failures {KEPT}; the others need a fix first: {FIX_KEY}",
        ),
    ],
    ids=["transient", "permanent", "content-filter", "mixed"],
)
def test_the_failure_message_says_what_will_finish_the_run(failed_calls, message):
    summary = RunSummary(run_id="r1", run_dir=Path("r1"), groups=[], failed_calls=failed_calls)
    assert summary.failure_message() == message


def test_tables_are_written_sorted_by_their_key(tmp_path):
    key = {"run_id": "r", "model": "m", "condition": "baseline", "thread_id": "t", "status": "ok"}
    write_table([{**key, "turn": 2}, {**key, "turn": 0}], RESPONSES, tmp_path / "responses.parquet")
    table = pq.read_table(tmp_path / "responses.parquet")
    assert table.schema.equals(RESPONSES.schema) and table["turn"].to_pylist() == [0, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["responses.parquet"]


def test_the_summary_says_what_failed_and_lists_every_group():
    summary = RunSummary(
        run_id="r1",
        run_dir=Path("runs/r1"),
        groups=[
            GroupSummary(
                model="m",
                group="baseline",
                counts={"answered": 5, "failed": 1, "judged": 3},
                score=62.5,
                cost_usd=0.75,
            ),
        ],
        count_labels=["answered", "failed", "judged"],
        failed_calls={"rate_limit": 2},
        failure_examples={"rate_limit": "m: Rate limit reached (gave up after 6 attempts; re-run to retry)"},
    )
    assert summary.markdown().splitlines() == [
        "# Evaluation run r1",
        "",
        "**2 calls failed: rate limit 2; re-run the same command to finish (completed calls are kept)**",
        "",
        "- rate limit (2), e.g. m: Rate limit reached (gave up after 6 attempts; re-run to retry)",
        "",
        "### m",
        "",
        "| condition | answered | failed | judged | mean | USD |",
        "|---|---|---|---|---|---|",
        "| baseline | 5 | 1 | 3 | 62.5 | 0.7500 |",
        "",
        "",
    ]
    succeeded = summary.model_copy(update={"failed_calls": {}, "failure_examples": {}})
    assert succeeded.markdown().splitlines()[2:4] == ["**Every call succeeded.**", ""]


def test_the_manifest_names_what_ran_and_carries_the_benchmarks_own_facts(tmp_path):
    config = EvalConfig(models=[ModelSpec(model="openai/a")])
    settings = EvaluationSettings(dataset_dir=tmp_path / "build", run_dir=tmp_path / "run", config=config)
    plan = RunPlan[ModelSpec, ModelSpec](
        run_id="r1",
        run_dir=settings.run_dir,
        dataset_dir=settings.dataset_dir,
        dataset_fingerprint="f" * 64,
        jobs=[],
        prompts={"rubric_v1": "ab", "reask_v1": "cd"},
        judge_rubric="rubric_v1",
        manifest_facts={"threads": 3},
        notes=["a caveat"],
    )
    summary = RunSummary(run_id="r1", run_dir=settings.run_dir, groups=[], failed_calls={})
    path = write_manifest.fn(settings, plan, summary)
    manifest = json.loads(path.read_text())
    assert path == tmp_path / "run" / "manifest.json"
    assert manifest["dataset"] == {"dir": str((tmp_path / "build").resolve()), "fingerprint": "f" * 64}
    assert manifest["config"]["models"][0]["model"] == "openai/a"
    assert (manifest["prompts"], manifest["threads"], manifest["notes"]) == (
        {"rubric_v1": {"sha256": "ab"}, "reask_v1": {"sha256": "cd"}},
        3,
        ["a caveat"],
    )
    assert manifest["judge_rubric"] == {"version": "rubric_v1", "sha256": "ab"}
    assert manifest["config_sha256"] == settings_sha256(config.model_dump(mode="json"))
    assert manifest["project"] == {"name": "threadmed-qa", "version": metadata.version("threadmed-qa")}
    assert {"litellm", "prefect"} <= manifest["packages"].keys() and "dirty" in manifest["git"]
    assert manifest["summary"]["run_id"] == "r1"
