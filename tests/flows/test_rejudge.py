"""Re-judging stored runs through litellm's real HTTP path: the local server counts every call per model, so
a test sees that only the new judge is asked, once per answer, in single calls, after failures, in batches
(finished by the poller), and in another epoch; for ThReadMed-QA and the consultation benchmark."""

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.consult_evaluate import consult_evaluate
from flows.evaluate_models import evaluate_models
from flows.rejudge import rejudge_run
from flows.resume_batch_runs import resume_batch_runs
from tasks.benchmarks.consult.cases.case_set import write_case_set
from tasks.benchmarks.registry import BENCHMARKS
from tasks.evals.config import EvalConfig, JudgeSpec, ModelSpec
from tasks.evals.estimate import estimate_plan
from tasks.evals.rejudge import JudgeChoices, read_source_run, rejudge_settings, rejudging
from tasks.llm.ledger import CallLedger
from tasks.llm.request import Prices, RetryPolicy
from tests.eval_fixtures import write_dataset
from tests.flows.test_consult_evaluate import SETTINGS, agent_reply, cases
from tests.flows.test_consult_evaluate import config as consult_config
from tests.llm_replies import consult_reply
from tests.llm_server import LLMServer
from tests.llm_server_state import Action

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
# 3 test threads of 3, 4 and 6 turns: 13 baseline and 10 oracle turns. The source run's first call (turn 0
# of the first sampled thread, of 3 turns, in the baseline) fails for good, so its 2 later turns are not run.
SKIPPED = 2


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


@pytest.fixture(scope="module")
def source(tmp_path_factory, server) -> Path:
    """A finished ThReadMed run of `alpha`, judged by `judge`, whose first answer failed for good."""
    run_dir = tmp_path_factory.mktemp("source")
    config = EvalConfig(
        models=[ModelSpec(name="alpha", model="openai/alpha", api_base=server.url, prices=PRICES)],
        judge=JudgeSpec(name="judge", model="openai/judge", api_base=server.url, prices=PRICES, max_reasks=0),
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
        max_workers=1,  # the scripted failure hits the first thread's turn 0
    )
    server.script(Action(status=400), model="alpha")
    dataset = write_dataset(tmp_path_factory.mktemp("build"))
    state = evaluate_models(
        dataset_dir=str(dataset), run_dir=str(run_dir), config=config, report=False, return_state=True
    )
    assert state.is_failed()
    return run_dir


def read(run_dir: Path, name: str) -> list[dict]:
    return pq.read_table(run_dir / f"{name}.parquet").to_pylist()


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def answered(run_dir: Path) -> list[dict]:
    return [row for row in read(run_dir, "responses") if row["status"] == "ok"]


def calls_since(server: LLMServer, before: int) -> Counter[str]:
    return Counter(request.model for request in server.requests[before:])


def rejudge(source: Path, out: Path, judge: str, **options):
    """The rejudge-run flow of `source` into `out` with the judge `judge` (and options of JudgeChoices)."""
    choices = JudgeChoices(model=judge, **options)
    return rejudge_run(run_dir=str(source), out_dir=str(out), judge=choices, report=False, return_state=True)


def test_a_new_judge_is_called_once_per_answer_and_no_answer_is_asked_again(source, server, tmp_path):
    answers = len(answered(source))
    assert answers == 13 + 10 - 1 - SKIPPED
    before = len(server.requests)
    state = rejudge(source, tmp_path, "openai/judge2", api_base=server.url)
    assert calls_since(server, before) == {"judge2": answers}
    # Completed: the source's failed answer is the source's, and no re-run of this one would ask it.
    assert state.is_completed()

    run_id = manifest(tmp_path)["run_id"]
    assert read(tmp_path, "responses") == [{**row, "run_id": run_id} for row in read(source, "responses")]
    judgments = read(tmp_path, "judgments")
    assert Counter((j["judge_model"], j["parse_status"]) for j in judgments) == {
        ("openai/judge2", "ok"): answers,
        ("openai/judge2", "not_run"): 1 + SKIPPED,
    }
    written = manifest(tmp_path)
    assert written["rejudge"] == {
        "source_run_id": manifest(source)["run_id"], "source_run_dir": str(source.resolve()), "judge_epoch": 0
    }  # fmt: skip
    assert (written["config"]["judge"]["model"], written["config"]["judge"]["epoch"]) == ("openai/judge2", 0)
    assert written["config"]["models"] == manifest(source)["config"]["models"]
    assert written["notes"][-1].startswith(f"Answers replayed from run {manifest(source)['run_id']} (")
    # The answers cost the source run: this one's costs and calls are the (unpriced) judge's alone.
    summary = written["summary"]
    assert summary["calls_by_mode"] == {"single": {"calls": answers, "cost_usd": 0.0}}
    assert [group["cost_usd"] for group in summary["groups"]] == [0.0, 0.0]
    assert all(group["cost_usd"] > 0 for group in manifest(source)["summary"]["groups"])
    assert summary["failed_calls"] == {}
    assert [group["counts"]["answer\nfailed"] for group in summary["groups"]] == [1, 0]


def test_failed_judge_calls_are_made_again_by_a_rerun_and_successful_ones_are_not(source, server, tmp_path):
    answers = len(answered(source))
    before = len(server.requests)
    server.script(Action(status=400), Action(status=400), model="judge3")
    first = rejudge(source, tmp_path, "openai/judge3", api_base=server.url)
    assert first.is_failed() and first.message.startswith("2 calls failed: bad request 2.")
    assert [j["parse_status"] for j in read(tmp_path, "judgments")].count("failed") == 2

    second = rejudge(source, tmp_path, "openai/judge3", api_base=server.url)
    assert second.is_completed()
    made = server.requests[before:]
    assert Counter(request.model for request in made) == {"judge3": answers + 2}
    assert Counter(request.body_hash for request in made if request.ok).most_common(1)[0][1] == 1
    assert [j["parse_status"] for j in read(tmp_path, "judgments")].count("ok") == answers


def test_an_evaluation_into_a_rejudged_folder_is_refused_before_asking_any_answer(source, server, tmp_path):
    assert rejudge(source, tmp_path, "openai/judge6", api_base=server.url).is_completed()
    before = len(server.requests)
    config = EvalConfig.model_validate(manifest(source)["config"])
    state = evaluate_models(
        dataset_dir=manifest(source)["dataset"]["dir"], run_dir=str(tmp_path), config=config, report=False,
        return_state=True,
    )  # fmt: skip
    assert state.is_failed() and state.message == (
        f"{tmp_path} re-judges run {manifest(source)['run_id']}, whose answers are replayed, never asked "
        "again: finish it with `threadmed judge rerun` (the rejudge-run flow), or give this evaluation "
        "another folder"
    )
    assert len(server.requests) == before


def test_the_source_s_own_judge_reads_every_grade_from_its_ledger_and_another_epoch_asks_anew(
    source, server, tmp_path
):
    recorded = {(j["thread_id"], j["condition"], j["turn"]): j["call_key"] for j in read(source, "judgments")}
    made, keys = {}, {}
    for epoch in (0, 1):
        before = len(server.requests)
        assert rejudge(source, tmp_path / str(epoch), "judge", epoch=epoch).is_completed()
        made[epoch] = calls_since(server, before)
        keys[epoch] = {
            (j["thread_id"], j["condition"], j["turn"]): j["call_key"]
            for j in read(tmp_path / str(epoch), "judgments")
        }
    # Epoch 0 of the source's judge is the source's own calls: read from its ledger, none paid again.
    assert made == {0: {}, 1: {"judge": len(answered(source))}}
    assert keys[0] == recorded
    assert not {key for key in keys[1].values() if key} & {key for key in recorded.values() if key}
    # The same grades; what they consumed and cost was the source's, none of it this run's.
    unpaid = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "attempts": 0}
    assert read(tmp_path / "0", "judgments") == [
        {**row, "run_id": manifest(source)["run_id"], **(unpaid if row["call_key"] else {})}
        for row in read(source, "judgments")
    ]
    reused = manifest(tmp_path / "0")["summary"]
    assert (reused["invocation_calls"], reused["calls_by_mode"]) == (
        {"reused": {"calls": len(answered(source)), "cost_usd": 0.0}},
        {"reused": {"calls": len(answered(source)), "cost_usd": 0.0}},
    )
    # The same config is the same run (its id): said in its notes, so it is reported in the source's place.
    assert (
        manifest(tmp_path / "0")["run_id"] == manifest(source)["run_id"] != manifest(tmp_path / "1")["run_id"]
    )
    source_id = manifest(source)["run_id"]
    assert manifest(tmp_path / "0")["notes"][-1] == (
        f"Its judge, rubric and parameters are those of run {source_id} ({source.resolve()}): every grade "
        "that run holds is read from its ledger, not asked again, and this folder is that run (the same run "
        "id): report it in that run's place, not beside it."
    )
    assert not manifest(tmp_path / "1")["notes"][-1].startswith("Its judge")


def test_a_rerun_of_a_rerun_back_to_the_first_judge_reads_its_grades_from_the_first_run(
    source, server, tmp_path
):
    answers = len(answered(source))
    assert rejudge(source, tmp_path / "second", "openai/judge7", api_base=server.url).is_completed()
    before = len(server.requests)
    first_judge = manifest(source)["config"]["judge"]
    back = rejudge(tmp_path / "second", tmp_path / "back", first_judge["model"], api_base=server.url)
    assert back.is_completed()
    assert calls_since(server, before) == {}  # every grade of the first judge is in the source's ledger
    scores = {(j["thread_id"], j["condition"], j["turn"]): j["score"] for j in read(source, "judgments")}
    assert {
        (j["thread_id"], j["condition"], j["turn"]): j["score"] for j in read(tmp_path / "back", "judgments")
    } == scores
    reused = [r for r in CallLedger(tmp_path / "back" / "ledger").records()]
    assert {(r.reused_from, r.cost_usd) for r in reused} == {(str((source / "ledger").resolve()), 0.0)}
    assert len(reused) == answers


def test_the_dry_run_counts_the_judge_calls_only(source, tmp_path):
    run = read_source_run(source)
    bench = rejudging(BENCHMARKS["threadmed"], run)
    settings = rejudge_settings(run, bench.config_model, JudgeChoices(model="openai/judge4"), tmp_path)
    [estimate] = estimate_plan(bench.plan(settings), bench.estimate_job)
    assert (estimate.model, estimate.role, estimate.calls, estimate.cached) == (
        "openai/judge4", "judge", len(answered(source)), 0
    )  # fmt: skip
    # The source's own judge: every grade is in its ledger, so the dry run has none to make, as the run.
    own = rejudge_settings(run, bench.config_model, JudgeChoices(model="judge"), tmp_path / "own")
    [estimate] = estimate_plan(bench.plan(own), bench.estimate_job)
    assert (estimate.model, estimate.calls, estimate.cached) == ("judge", 0, len(answered(source)))
    # --temperature 0 is the judge's own 0: the same calls (a float 0.0 in the key asked every one anew).
    estimates = {}
    for temperature in (0, 0.0, 0.7):
        chosen = JudgeChoices(model="judge", temperature=temperature)
        [estimate] = estimate_plan(
            bench.plan(rejudge_settings(run, bench.config_model, chosen, tmp_path / f"t{temperature}")),
            bench.estimate_job,
        )
        estimates[temperature] = (estimate.calls, estimate.cached)
    assert estimates == {0: (0, len(answered(source))), 0.7: (len(answered(source)), 0)}


def test_a_rejudge_has_its_own_spending_cap_never_the_source_run_s(source, tmp_path):
    run = read_source_run(source)
    run = run.model_copy(update={"config": {**run.config, "max_cost_usd": 9.0}})  # as if the source had one
    bench = rejudging(BENCHMARKS["threadmed"], run)
    capped = JudgeChoices(model="openai/judge4", max_cost_usd=0.5)
    assert rejudge_settings(run, bench.config_model, capped, tmp_path).config.max_cost_usd == 0.5
    uncapped = JudgeChoices(model="openai/judge4")
    assert rejudge_settings(run, bench.config_model, uncapped, tmp_path).config.max_cost_usd is None


def test_a_batch_rejudge_left_waiting_is_finished_by_the_poller_asking_no_answer(source, server, tmp_path):
    answers = len(answered(source))
    before = len(server.requests)
    out = tmp_path / "runs" / "claude"
    with LLMServer(batch_delay_s=3600) as batches:
        waiting = rejudge(
            source, out, "openai/judge5", api_base=batches.url, batch=True, batch_wait_s=0, batch_poll_s=0.02
        )
        assert waiting.name == "AwaitingBatches"
        polls = []
        while polls[-1:] != [{}] and len(polls) < 4:
            batches.finish_batches()
            polls.append(resume_batch_runs(runs_dir=str(tmp_path / "runs"), report=False))
        stats = batches.stats()
    assert [{run: outcome.split(":")[0] for run, outcome in poll.items()} for poll in polls] == [
        {str(out): "finished"},
        {},
    ]
    assert (stats["requests"], stats["batch_requests"], stats["max_submissions_per_custom_id"]) == (
        0,
        answers,
        1,
    )
    assert len(server.requests) == before  # the poller replayed the answers too
    assert manifest(out)["summary"]["calls_by_mode"]["batch"]["calls"] == answers
    assert [j["parse_status"] for j in read(out, "judgments")].count("ok") == answers


def consult_roles(model: str, messages: list[dict]) -> str:
    """Both consultation judges answer as the test server's FQR judge; `doc` is the agent."""
    return consult_reply(model, messages) if model.startswith("judge") else agent_reply(model, messages)


def test_a_consultation_run_is_rejudged_with_fqr_judge_calls_only(tmp_path):
    cases_dir = write_case_set(cases(), tmp_path / "cases", SETTINGS)
    with LLMServer(reply=consult_roles) as llm:
        consult_evaluate(
            cases_dir=str(cases_dir), run_dir=str(tmp_path / "source"), config=consult_config(llm.url),
            report=False,
        )  # fmt: skip
        before = len(llm.requests)
        state = rejudge(tmp_path / "source", tmp_path / "rejudged", "openai/judge2", api_base=llm.url)
        made = calls_since(llm, before)
    assert state.is_completed()
    # Per case: 1 judge call for the allergy's answer, 2 for the question's (its notes re-asked).
    assert made == {"judge2": 2 * 3}
    run_id = manifest(tmp_path / "rejudged")["run_id"]
    source_messages = read(tmp_path / "source", "messages")
    assert read(tmp_path / "rejudged", "messages") == [{**row, "run_id": run_id} for row in source_messages]
    # The same verdicts from another judge: every score as the source's, the judge named anew.
    assert read(tmp_path / "rejudged", "scores") == [
        {**row, "run_id": run_id, "judge_model": "openai/judge2"}
        for row in read(tmp_path / "source", "scores")
    ]
    assert (
        manifest(tmp_path / "rejudged")["rejudge"]["source_run_id"] == manifest(tmp_path / "source")["run_id"]
    )
    report = Path(BENCHMARKS["consult"].report([str(tmp_path / "rejudged")], None, None))
    assert (report / "index.html").is_file()  # a re-judged folder reports like any run
