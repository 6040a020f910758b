"""`threadmed snomed oracle-data` and `patient-eval`: the real commands (in a subprocess when
they run a flow), offline."""

import io
import json

import pytest
from rich.console import Console

from flows.cli.snomed_oracle import print_oracle_data
from tasks.benchmarks.snomed.vocabulary import add_case_set_codes, derive_synthea_vocabulary
from tasks.core.run_folder import claim_run_folder
from tests.flows.cli.terminal import (
    assert_usage_error,
    threadmed_before_any_flow,
    threadmed_here,
)
from tests.snomed_fixtures import CASES, write_case_set

pytestmark = pytest.mark.slow


def test_oracle_data_dry_run_run_then_the_patient_bench_on_its_held_out_pairs(tmp_path):
    write_case_set(tmp_path / "cases")
    data = [
        "snomed",
        "oracle-data",
        "--cases",
        "cases",
        "--out",
        "oracle",
        "--teacher",
        "threadmed/oracle-teacher",
    ]
    estimate = threadmed_here(*data, "--dry-run", cwd=tmp_path)
    assert estimate.returncode == 0, estimate.stderr
    assert "teacher" in estimate.stdout and "total: 9 calls at most" in estimate.stdout
    assert not (tmp_path / "oracle").exists()

    made = threadmed_here(*data, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "offline teacher: deterministic, from the lay lexicon" in made.stdout
    for split in ("train", "validation", "test"):
        assert f"  {split}: 1 positive, 2 negative pairs" in made.stdout
    assert "  rejected: none" in made.stdout and "Oracle data written to oracle" in made.stdout
    names = json.loads((tmp_path / "oracle" / "manifest.json").read_text())["leak_check"]["names"]
    # oracle.plan.run_vocabulary (not imported here: it brings litellm): the Synthea codes and the fixture's.
    record = [(c.code, c.display) for case in CASES for c in case.conditions]
    conditions = len(add_case_set_codes(derive_synthea_vocabulary(), record))
    assert (
        f"  leak check: names ({names:,}) and codes of {conditions:,} conditions, runs of 6+ digits"
        in made.stdout
    )
    assert {p.name for p in (tmp_path / "oracle").iterdir()} >= {
        "chat",
        "alpaca",
        "README.md",
        "manifest.json",
        "ledger",
    }

    # Reused with other counts or another teacher, the folder is refused before any flow, naming what
    # differs; the same inputs resume it, and --replace replaces it.
    manifest = (tmp_path / "oracle" / "manifest.json").read_bytes()
    other = [*data[:-1], "threadmed/patient", "--positives", "2", "--negatives", "1"]
    assert_usage_error(
        threadmed_before_any_flow(*other, cwd=tmp_path),
        "Invalid value for '--out': oracle holds oracle data made with other inputs (--teacher "
        "threadmed/oracle-teacher -> threadmed/patient; --negatives 2 -> 1; --positives 5 -> 2): pass "
        "--replace to replace it, or another --out folder",
    )
    assert (tmp_path / "oracle" / "manifest.json").read_bytes() == manifest
    for again in ([*data, "--dry-run"], [*other, "--replace", "--dry-run"]):
        assert threadmed_before_any_flow(*again, cwd=tmp_path).returncode == 0

    bench = threadmed_here(
        "snomed", "patient-eval", "--cases", "cases", "--out", "bench", "--oracle-data", "oracle",
        "--patients", "threadmed/patient", cwd=tmp_path,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    assert "Patient bench" in bench.stdout and "hallucination %" in bench.stdout
    assert "Traceback" not in bench.stderr
    metrics = json.loads((tmp_path / "bench" / "report" / "metrics.json").read_text())["patients"]
    held_out = {json.loads(line)["case_id"] for line in (tmp_path / "oracle" / "chat" / "test.jsonl").open()}
    manifest = json.loads((tmp_path / "bench" / "manifest.json").read_text())
    assert manifest["bench_cases"] == sorted(held_out)
    assert (metrics["threadmed/patient"]["hallucination"], metrics["threadmed/patient"]["leak"]) == (0.0, 0.0)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_limit_that_leaves_a_split_without_a_patient_is_refused_before_any_call(tmp_path, dry_run):
    write_case_set(tmp_path / "cases")  # 3 patients: one for each split
    result = threadmed_before_any_flow(
        "snomed", "oracle-data", "--cases", "cases", "--out", "oracle",
        "--teacher", "threadmed/oracle-teacher", "--limit", "2", *dry_run, cwd=tmp_path,
    )  # fmt: skip
    assert_usage_error(
        result,
        "Invalid value for '--limit': --limit 2 gives 2 patients: the split by patient (train 80%, "
        "validation 10%, test 10%) gives validation and test none (oracle-train needs train and validation "
        "pairs, patient-eval test's); use --limit 3 or more",
    )
    assert not (tmp_path / "oracle").exists()


def test_an_unknown_disclosure_is_a_usage_error(tmp_path):
    write_case_set(tmp_path / "cases")
    result = threadmed_here(
        "snomed", "oracle-data", "--cases", "cases", "--out", "oracle",
        "--teacher", "threadmed/oracle-teacher", "--disclosure", "nope", "--dry-run", cwd=tmp_path,
    )  # fmt: skip
    assert_usage_error(result, "Invalid value: disclosure: Input should be 'symptoms' or 'history'")


@pytest.mark.parametrize(
    ("names_checked", "line"),
    [
        (True, "  leak check: names (482) and codes of 358 conditions, runs of 6+ digits"),
        (False, "  leak check: runs of 6+ digits; names allowed (history disclosure)"),
    ],
)
def test_the_printed_counts_say_what_the_leak_check_read(tmp_path, names_checked, line):
    manifest = {
        "teacher": {"model": "openai/teacher", "offline": False, "label": None},
        "counts": {"kept": {"train": {"positive": 5, "negative": 2}}},
        "rejected": {"leak": 3},
        "leak_check": {"names_checked": names_checked, "conditions": 358, "names": 482, "min_digit_run": 6},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    printed = io.StringIO()
    print_oracle_data(tmp_path, Console(file=printed, width=200))
    assert printed.getvalue().splitlines() == [
        "Teacher openai/teacher",
        "  train: 5 positive, 2 negative pairs",
        "  rejected: leak 3",
        line,
        f"Oracle data written to {tmp_path}",
    ]


def test_an_out_folder_of_another_benchmark_is_a_usage_error(tmp_path):
    write_case_set(tmp_path / "cases")
    claim_run_folder(tmp_path / "snomed-run", "snomed")
    result = threadmed_before_any_flow(
        "snomed", "oracle-data", "--cases", "cases", "--out", "snomed-run",
        "--teacher", "threadmed/oracle-teacher", cwd=tmp_path,
    )  # fmt: skip
    assert_usage_error(
        result,
        "Invalid value for '--out': snomed-run belongs to the snomed benchmark, not snomed-oracle-data: give "
        "its runs another --out folder",
    )
    assert [path.name for path in (tmp_path / "snomed-run").iterdir()] == ["benchmark.json"]


def test_a_split_that_holds_no_pair_is_a_warning_saying_why(tmp_path, capsys):
    manifest = {
        "teacher": {"model": "openai/teacher", "offline": False, "label": None},
        "counts": {
            "kept": {split: {"positive": n, "negative": 0} for split, n in (("train", 9), ("validation", 0))},
            "cases": {"train": 2, "validation": 1, "test": 0},
        },
        "rejected": {"not_sure_on_positive": 4},
        "leak_check": {"names_checked": False, "conditions": 358, "names": 482, "min_digit_run": 6},
        "split": {"train": 0.8, "validation": 0.1, "test": 0.1},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    print_oracle_data(tmp_path, Console(file=io.StringIO(), width=200))
    assert capsys.readouterr().err.splitlines() == [
        f"Warning: {tmp_path / 'chat' / 'validation.jsonl'} holds 0 pairs: no pair of its 1 validation "
        "patient(s) was kept: each was rejected or its call failed (see the data folder's manifest.json); "
        "re-run `threadmed snomed oracle-data` into it to retry failed calls, or use another --teacher"
    ]
