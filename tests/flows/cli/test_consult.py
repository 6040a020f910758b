"""`threadmed consult mine`: the real command in a subprocess."""

import json

import pytest

from tests.flows.cli.terminal import error_lines, threadmed
from tests.tasks.benchmarks.consult.inquiry.fixtures import write_aci_csv


@pytest.mark.slow
def test_mine_writes_the_outputs_and_a_summary(tmp_path):
    write_aci_csv(tmp_path / "corpus")
    result = threadmed(
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
    result = threadmed("consult", "mine", "--corpora", "empty", "--out", "mined", cwd=tmp_path)
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
    result = threadmed("consult", "mine", "--corpora", "corpus", "--out", "mined", cwd=tmp_path)
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
    result = threadmed("consult", "mine", "--corpora", "corpus", "--out", "mined", cwd=tmp_path)
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
    result = threadmed(
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
    result = threadmed("consult", "cases", "--out", "cases", "--from-file", "cases.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert error_lines(result) == [
        "Error: cases.yaml: case 'c9': profile: Field required; gold: Tuple should have at least 1 item "
        "after validation, not 0; mni_target: Field required"
    ]
    assert not (tmp_path / "cases").exists()


@pytest.mark.slow
def test_evaluate_dry_run_run_and_report_with_the_reference_agents(tmp_path):
    built = threadmed("consult", "cases", "--out", "cases", "--n", "9", "--seed", "3", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    agents = ["--models", "threadmed/consult-silent,threadmed/consult-markov"]

    estimate = threadmed(
        "consult", "evaluate", "--cases", "cases", "--out", "run", *agents, "--dry-run", cwd=tmp_path
    )
    assert estimate.returncode == 0, estimate.stderr
    assert "threadmed/consult-markov" in estimate.stdout and not (tmp_path / "run").exists()

    run = threadmed("consult", "evaluate", "--cases", "cases", "--out", "run", *agents, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Treatment plan, % [95% CI]" in run.stdout and "Composite, %" in run.stdout
    assert "Traceback" not in run.stderr
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"messages.parquet", "scores.parquet", "report"}
    metrics = json.loads((tmp_path / "run" / "report" / "metrics.json").read_text())
    assert set(metrics["models"]) == {"threadmed/consult-silent", "threadmed/consult-markov"}
    assert metrics["models"]["threadmed/consult-silent"]["secondary"]["questions"] == 0.0

    again = threadmed("consult", "report", "run", "--out", "again", "--resamples", "200", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "index.html").is_file()


def test_evaluate_on_a_folder_that_is_not_a_case_set(tmp_path):
    (tmp_path / "cases").mkdir()
    result = threadmed(
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
