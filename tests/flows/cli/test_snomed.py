"""`threadmed snomed`: the real command (in a subprocess when it runs a flow), from a reference JSON to a
report, offline."""

import json
import re
import sqlite3

import pytest

from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT, PROMPTS_DIR
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, record_text
from tasks.llm.prompts import load_prompt
from tests.flows.cli.terminal import assert_usage_error, error_lines, threadmed_here
from tests.llm_replies import SNOMED_ORACLE, snomed_reply
from tests.llm_server import LLMServer
from tests.snomed_fixtures import CASES, write_case_set
from tests.tasks.benchmarks.snomed.test_report import make_run

pytestmark = pytest.mark.slow

REFERENCE = [
    {
        "patient_id": f"p{i}",
        "oracle_context": "Patient: 54-year-old female.\nConditions: Essential hypertension; Prediabetes",
        "snomed_gold": ["59621000 - Essential hypertension (disorder)", "714628002 - Prediabetes (finding)"],
    }
    for i in range(6)
]
OFFLINE = ["--models", "threadmed/prevalence,threadmed/checklist"]
PROGRESS_LINE = re.compile(
    r"\[\d+:\d\d\] (?P<role>.+?): (?P<done>[\d,]+) of (?P<total>[\d,]+) calls "
    r"done, (?P<failed>\d+) failed, (?P<in_flight>\d+) in flight, [\d,]+ tokens, 0\.0000 USD"
)


def test_cases_evaluate_dry_run_run_and_report_from_a_reference_json(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps(REFERENCE))
    built = threadmed_here(
        "snomed", "cases", "reference.json", "--out", "cases", "--train-share", "0.9", cwd=tmp_path
    )
    assert built.returncode == 0, built.stderr
    manifest = json.loads((tmp_path / "cases" / "manifest.json").read_text())
    assert (manifest["counts"]["train"], manifest["counts"]["test"]) == (5, 1)
    assert "6 cases (5 train, 1 test; 12 gold codes, 2 distinct) written to cases" in built.stdout

    estimate = threadmed_here(
        "snomed", "evaluate", "--cases", "cases", "--out", "run", *OFFLINE, "--dry-run", cwd=tmp_path
    )
    assert estimate.returncode == 0, estimate.stderr
    assert "threadmed/checklist" in estimate.stdout and "offline-patient" in estimate.stdout
    assert not (tmp_path / "run").exists()

    run = threadmed_here(
        "snomed", "evaluate", "--cases", "cases", "--out", "run", *OFFLINE, "--patient-prompt-form", "named",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    # Not a terminal: plain progress lines, the last of each role with the calls the run made in the end.
    final = {}
    for line in run.stdout.splitlines():
        if match := PROGRESS_LINE.fullmatch(line):
            final[match["role"]] = match
    assert sorted(final) == [
        "clinician threadmed/checklist",
        "clinician threadmed/prevalence",
        "patient offline-patient",
    ]
    for match in final.values():
        assert match["done"] == match["total"] and match["done"] != "0"
        assert (match["failed"], match["in_flight"]) == ("0", "0")
    assert "SNOMED diagnosis: macro % [95% CI]" in run.stdout and "Traceback" not in run.stderr
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {
        "conversations.parquet",
        "predictions.parquet",
        "scores.parquet",
        "manifest.json",
        "ledger",
        "report",
    }
    metrics = json.loads((tmp_path / "run" / "report" / "metrics.json").read_text())
    assert set(metrics["models"]) == {"threadmed/prevalence", "threadmed/checklist"}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (manifest["config"]["patient_prompt_form"], manifest["patient_prompt"]["version"]) == (
        "named",
        "snomed_patient_v1",
    )
    assert "Patient prompt form: named." in (tmp_path / "run" / "report" / "report.md").read_text()

    again = threadmed_here("snomed", "report", "run", "--out", "again", "--resamples", "200", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "index.html").is_file()


def test_evaluate_on_a_folder_that_is_not_a_case_set(tmp_path):
    (tmp_path / "cases").mkdir()
    assert_usage_error(
        threadmed_here("snomed", "evaluate", "--cases", "cases", "--out", "run", *OFFLINE, cwd=tmp_path),
        "Invalid value for '--cases': cases is not a SNOMED case set (no cases.parquet); "
        "pass the --out folder of `threadmed snomed cases`",
    )


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])  # the dry run checks it before its first line
def test_prevalence_needs_a_train_split(tmp_path, dry_run):
    write_case_set(tmp_path / "cases", [case for case in CASES if case.split == "test"])
    arguments = ["--cases", "cases", "--out", "run", *OFFLINE, *dry_run]
    assert_usage_error(
        threadmed_here("snomed", "evaluate", *arguments, cwd=tmp_path),
        "Invalid value for '--models': threadmed/prevalence needs train cases to count codes in: build the "
        "case set with a train share (threadmed snomed cases --train-share 0.5)",
    )


def test_an_unknown_patient_prompt_form_is_a_usage_error(tmp_path):
    write_case_set(tmp_path / "cases")
    options = ["--models", "threadmed/checklist", "--patient-prompt-form", "verbatim", "--dry-run"]
    assert_usage_error(
        threadmed_here("snomed", "evaluate", "--cases", "cases", "--out", "run", *options, cwd=tmp_path),
        "Invalid value: patient_prompt_form: Input should be 'lay' or 'named'",
    )


def test_a_served_oracle_named_on_the_command_line_is_sent_the_prompt_it_was_trained_on(tmp_path):
    write_case_set(tmp_path / "cases")
    with LLMServer(reply=snomed_reply) as server:
        run = threadmed_here(
            "snomed", "evaluate", "--cases", "cases", "--out", "run", "--models", "openai/doc",
            "--patient", f"openai/{SNOMED_ORACLE}", "--patient-prompt", "oracle_patient_v1",
            "--api-base", server.url, "--max-concurrency", "1", "--no-report", cwd=tmp_path,
        )  # fmt: skip
        requests = server.requests
    assert run.returncode == 0, run.stdout + run.stderr
    oracle = load_prompt(ORACLE_PATIENT_PROMPT)
    trained_on = {
        oracle.render(
            "system",
            disclosure_rule=DISCLOSURE_RULES["symptoms"],
            record=record_text(case, "lay", "symptoms"),
        )
        for case in CASES
        if case.split == "test"
    }
    assert {
        request.messages[0]["content"] for request in requests if request.model == SNOMED_ORACLE
    } == trained_on
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (manifest["config"]["patient_prompt"], manifest["patient_prompt"]["version"]) == (
        str(ORACLE_PATIENT_PROMPT.resolve()),
        "oracle_patient_v1",
    )


def test_a_patient_prompt_that_is_no_file_nor_a_shipped_name_is_a_usage_error(tmp_path):
    write_case_set(tmp_path / "cases")
    options = ["--models", "threadmed/checklist", "--patient-prompt", "oracle_patient_v2", "--dry-run"]
    assert_usage_error(
        threadmed_here("snomed", "evaluate", "--cases", "cases", "--out", "run", *options, cwd=tmp_path),
        f"Invalid value for '--patient-prompt': oracle_patient_v2: no such file, nor the name of a patient "
        f"prompt in {PROMPTS_DIR} (oracle_patient_v1, patient_lay_v1, patient_v1)",
    )
    assert not (tmp_path / "run").exists()


def test_a_source_in_no_known_format_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = threadmed_here("snomed", "cases", "notes.txt", "--out", "cases", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert error_lines(result) == [
        f"Error: cannot tell the format of {tmp_path / 'notes.txt'}: expected a reference .json file, an "
        "OMOP .duckdb file, or a folder with patients.csv (Synthea CSV), person.csv/.parquet (OMOP) or "
        "*.json bundles (FHIR)"
    ]
    assert not (tmp_path / "cases").exists()


def test_evaluate_refuses_cases_that_are_not_their_manifests(tmp_path):
    # A rebuild of 2 cases interrupted before its manifest: the manifest still names the 3 cases' file.
    folder = write_case_set(tmp_path / "cases", CASES)
    recorded = json.loads((folder / "manifest.json").read_text())["cases_sha256"]
    write_case_set(tmp_path / "two", CASES[:2])
    (folder / "cases.parquet").write_bytes((tmp_path / "two" / "cases.parquet").read_bytes())
    assert_usage_error(
        threadmed_here("snomed", "evaluate", "--cases", "cases", "--out", "run", *OFFLINE, cwd=tmp_path),
        f"Invalid value for '--cases': cases/cases.parquet does not match the sha256 its manifest records "
        f"({recorded[:12]}): rebuild the case set with `threadmed snomed cases`",
    )
    assert not (tmp_path / "run").exists()


def test_runs_over_different_case_sets_are_refused_in_one_line(tmp_path):
    make_run(tmp_path, "r1", ["alpha"])
    make_run(tmp_path, "r2", ["beta"], fingerprint="fp-cases-2")
    fingerprint = json.loads((tmp_path / "cases" / "manifest.json").read_text())["cases_sha256"]
    result = threadmed_here("snomed", "report", "r1", "r2", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert error_lines(result) == [
        f"Error: these runs use different case sets, so their scores are not comparable (r1 (r1): "
        f"{fingerprint}, r2 (r2): fp-cases-2): report them separately"
    ]
    assert not (tmp_path / "r1" / "report-merged").exists()


def test_cases_never_replace_a_folder_holding_other_files(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps(REFERENCE))
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "notes.txt").write_text("mine")
    result = threadmed_here("snomed", "cases", "reference.json", "--out", "cases", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert error_lines(result) == [
        "Error: cases holds files other than cases.parquet, manifest.json (notes.txt): choose a new or empty "
        "folder"
    ]
    assert [p.name for p in (tmp_path / "cases").iterdir()] == ["notes.txt"]


def test_a_truncated_reference_json_is_one_line_naming_the_file_and_the_position(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps(REFERENCE)[:60])
    result = threadmed_here("snomed", "cases", "reference.json", "--out", "cases", cwd=tmp_path)
    assert (result.returncode, error_lines(result)) == (
        1,
        [
            f"Error: {tmp_path / 'reference.json'}: not valid JSON: unexpected end of data at line 1, "
            "column 61 (byte 60); the file may be truncated or empty: export or copy it again"
        ],
    )
    assert not (tmp_path / "cases").exists()


def test_fhir_bundles_without_a_snomed_condition_warn_and_fail_unless_allowed(tmp_path):
    (tmp_path / "fhir").mkdir()
    patient = {"resourceType": "Patient", "id": "p1", "gender": "male", "birthDate": "1970"}
    back_pain = {"resourceType": "Condition", "code": {"text": "Back pain"}, "onsetDateTime": "2019"}
    bundle = {"resourceType": "Bundle", "entry": [{"resource": patient}, {"resource": back_pain}]}
    (tmp_path / "fhir" / "Jo_p1.json").write_text(json.dumps(bundle))
    skipped = (
        f"Warning: {tmp_path / 'fhir'}: conditions without a SNOMED CT code (ICD-10 or text only): 1 skipped"
    )

    refused = threadmed_here("snomed", "cases", "fhir", "--out", "cases", cwd=tmp_path)
    assert (refused.returncode, error_lines(refused)) == (
        1,
        [
            skipped,
            f"Error: {tmp_path / 'fhir'}: none of its 1 cases has a gold code; check that its conditions are "
            "SNOMED CT coded and kept by the gold options, or build it anyway with --allow-empty",
        ],
    )
    assert not (tmp_path / "cases").exists()

    allowed = threadmed_here("snomed", "cases", "fhir", "--out", "cases", "--allow-empty", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    # Only our warnings: Prefect's log lines are not the command's to assert.
    warnings = [line for line in allowed.stderr.splitlines() if line.startswith("Warning: ")]
    assert (warnings, allowed.stdout.splitlines()) == (
        [
            skipped,
            f"Warning: {tmp_path / 'fhir'}: none of its 1 cases has a gold code; written anyway "
            "(--allow-empty)",
        ],
        ["1 cases (0 train, 1 test; 0 gold codes, 0 distinct) written to cases"],
    )
    assert json.loads((tmp_path / "cases" / "manifest.json").read_text())["skipped"] == {
        "conditions without a SNOMED CT code (ICD-10 or text only)": 1
    }


def test_a_reference_date_that_is_no_date_is_a_usage_error(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps(REFERENCE))
    assert_usage_error(
        threadmed_here(
            "snomed",
            "cases",
            "reference.json",
            "--out",
            "cases",
            "--reference-date",
            "2020-02-30",
            cwd=tmp_path,
        ),
        "Invalid value for '--reference-date': '2020-02-30' is not a date YYYY-MM-DD "
        "(day is out of range for month)",
    )


def test_an_unknown_format_is_a_usage_error(tmp_path):
    (tmp_path / "reference.json").write_text(json.dumps(REFERENCE))
    assert_usage_error(
        threadmed_here(
            "snomed", "cases", "reference.json", "--out", "cases", "--format", "xml", cwd=tmp_path
        ),
        "Invalid value for '--format': 'xml' is not one of fhir, synthea_csv, omop, reference",
    )


def test_a_sqlite_file_is_refused_without_going_online(tmp_path):
    with sqlite3.connect(tmp_path / "cdm.db") as con:
        con.execute("create table person (person_id integer)")
    con.close()
    result = threadmed_here("snomed", "cases", "cdm.db", "--out", "cases", cwd=tmp_path)
    assert (result.returncode, error_lines(result)) == (
        1,
        [
            f"Error: {tmp_path / 'cdm.db'}: a SQLite database, not DuckDB; export its OMOP tables to a "
            "folder of <table>.csv or .parquet files, or copy them into a DuckDB file"
        ],
    )
