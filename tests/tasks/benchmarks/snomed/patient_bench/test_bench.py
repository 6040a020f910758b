"""The patient bench's scores on hand-written patients whose every answer is known, and its question set."""

import json

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.snomed.case import PatientRecord, RecordObservation
from tasks.benchmarks.snomed.leak import unread_letters
from tasks.benchmarks.snomed.offline_models import PATIENT
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.benchmarks.snomed.oracle.dataset import write_oracle_dataset
from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER
from tasks.benchmarks.snomed.patient import load_lexicon
from tasks.benchmarks.snomed.patient_bench.benchmark import PATIENT_BENCH
from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
from tasks.benchmarks.snomed.patient_bench.questions import BenchQuestion
from tasks.benchmarks.snomed.patient_bench.report import (
    BenchReportSettings,
    bench_table,
    build_bench_report,
    metrics_by_patient,
    metrics_csv,
)
from tasks.benchmarks.snomed.patient_bench.scoring import (
    clinical_terms_in,
    consistent,
    mentions_fact,
    patient_metrics,
    score_answer,
)
from tasks.core.preflight import UserError
from tasks.evals.config import EvaluationSettings, JudgeSpec, ModelSpec, SampleSpec
from tasks.evals.estimate import estimate_plan
from tasks.llm.offline import register_offline_model
from tests.llm_server import LLMServer
from tests.llm_server_state import Action
from tests.snomed_fixtures import write_case_set
from tests.snomed_oracle_fixtures import run_inline

NOT_SURE = "I'm not sure."
RASH = "Yes, I get an itchy rash on my arms every day."
NAMED = "My blood pressure runs high, they call it hypertension."


def _user(messages):
    return messages[-1]["content"]


NEVER_KNOWS = register_offline_model("test-patient-never-knows", lambda messages, params: NOT_SURE)
HALLUCINATES = register_offline_model("test-patient-hallucinates", lambda messages, params: RASH)
LEAKS = register_offline_model(
    "test-patient-leaks", lambda messages, params: NAMED if "pressure" in _user(messages) else NOT_SURE
)
# The judge finds the rash invented and everything else faithful; the mumbling judge never gives a verdict.
JUDGE = register_offline_model(
    "test-patient-judge",
    lambda messages, params: json.dumps({"faithful": "rash" not in _user(messages), "reason": "checked"}),
)
MUMBLES = register_offline_model("test-patient-judge-mumbles", lambda messages, params: "Hard to say.")


def bench(tmp_path, patients, **settings):
    cases = write_case_set(tmp_path / "cases")
    config = PatientBenchConfig(models=[ModelSpec(model=p) for p in patients], **settings)
    rows = run_inline(PATIENT_BENCH, cases, tmp_path / "run", config)
    return rows, metrics_by_patient(rows["scored"])


def expected(**values):
    base = {
        "disclosure": 0.0, "hallucination": 0.0, "leak": 0.0, "lay_language": 1.0, "mean_words": 3.0,
        "consistency": 1.0, "faithful": 1.0, "answers": 8, "unread": 0, "mixed": 0, "failed": 0,
        "positive_answers": 2, "negative_answers": 6, "judged": 8, "n_judge_unparseable": 0,
        "n_judge_failed": 0, "n_judge_cut": 0,
    }  # fmt: skip
    return {**base, **values}


def test_hand_written_patients_score_what_their_answers_are(tmp_path):
    # Case p1 (hypertension, a systolic pressure): one positive and three negative questions, asked twice.
    rows, metrics = bench(
        tmp_path,
        [NEVER_KNOWS, HALLUCINATES, LEAKS, PATIENT],
        sample=SampleSpec(limit=1),
        judge=JudgeSpec(model=JUDGE),
    )
    assert metrics == {
        NEVER_KNOWS: expected(),
        HALLUCINATES: expected(hallucination=1.0, mean_words=11.0, faithful=0.0),
        LEAKS: expected(disclosure=1.0, leak=0.25, lay_language=0.75, mean_words=4.5),
        PATIENT: expected(disclosure=1.0, mean_words=(2 * 12 + 6 * 3) / 8),
    }
    leaking = [row for row in rows["scored"] if row["model"] == LEAKS and row["leaked"]]
    assert [(row["kind"], row["leaked_codes"], row["clinical_terms"]) for row in leaking] == [
        ("positive", ["59621000"], ["hypertension"])
    ] * 2


def test_a_judge_without_a_verdict_is_unparseable_never_a_grade(tmp_path):
    rows, metrics = bench(
        tmp_path, [NEVER_KNOWS], sample=SampleSpec(limit=1), judge=JudgeSpec(model=MUMBLES, max_reasks=1)
    )
    assert {row["judge_status"] for row in rows["scored"]} == {"unparseable"}
    # faithful is a share of the answers judged: none here, and the table says why
    assert metrics[NEVER_KNOWS] == expected(faithful=None, judged=0, n_judge_unparseable=8)
    table = bench_table(metrics)
    assert [row for row in table.rows if row[0].startswith(("answers", "judge"))] == [
        ["answers", "8"],
        ["answers not read whole", "0"],
        ["answers saying both", "0"],
        ["answers judged", "0"],
        ["judge replies unparseable", "8"],
        ["judge calls failed", "0"],
        ["judge replies cut", "0"],
    ]


def test_a_judge_reply_cut_at_its_max_tokens_is_asked_again_then_judge_cut_and_counted(tmp_path):
    # Through litellm to the local server: every reply reads as a verdict by its text, but was cut.
    cut = Action(content='{"faithful": true, "reason": "The answer', finish_reason="length")
    with LLMServer() as server:
        server.script(*[cut] * 16)  # 8 answers, each asked and re-asked once
        judge = JudgeSpec(name="judge", model="openai/judge", api_base=server.url, max_reasks=1)
        rows, metrics = bench(tmp_path, [NEVER_KNOWS], sample=SampleSpec(limit=1), judge=judge)
        assert len(server.requests) == 16
    assert {row["judge_status"] for row in rows["scored"]} == {"judge_cut"}
    assert metrics[NEVER_KNOWS] == expected(faithful=None, judged=0, n_judge_cut=8)
    summary = PATIENT_BENCH.summarize("r1", tmp_path / "run", rows["solved"], rows["scored"])
    assert [group.counts for group in summary.groups] == [
        {"answered": 4, "failed": 0, "judge\ncut": 4, "cut": 0}
    ] * 2  # per asking (epoch)
    build_bench_report.fn(run_dirs=[str(tmp_path / "run")], out_dir=str(tmp_path / "report"), settings=None)
    assert "| judge replies cut | 8 |" in (tmp_path / "report" / "report.md").read_text()


def test_a_reply_the_provider_withheld_is_not_judged_and_the_dry_run_counts_nothing_left(tmp_path):
    """A content-filtered reply is final: the run takes it from the ledger and judges no answer, so a dry
    run counts it as made, with no judge call after it."""
    withheld = Action(content="", finish_reason="content_filter")
    cases = write_case_set(tmp_path / "cases")
    with LLMServer() as server:
        server.script(*[withheld] * 8)
        patient = ModelSpec(name="patient", model="openai/patient", api_base=server.url)
        config = PatientBenchConfig(
            models=[patient], sample=SampleSpec(limit=1), judge=JudgeSpec(model=JUDGE)
        )
        rows = run_inline(PATIENT_BENCH, cases, tmp_path / "run", config)
        assert len(server.requests) == 8
    assert [(row["status"], row.get("judge_status")) for row in rows["scored"]] == [("failed", None)] * 8
    settings = EvaluationSettings[PatientBenchConfig](
        dataset_dir=cases, run_dir=tmp_path / "run", config=config
    )
    estimates = estimate_plan(PATIENT_BENCH.plan(settings), PATIENT_BENCH.estimate_job)
    assert {(e.model, e.role): (e.calls, e.cached) for e in estimates} == {
        ("patient", "patient"): (0, 8),
        (JUDGE, "judge"): (0, 0),
    }


def test_without_a_judge_nothing_is_judged_and_the_report_compares_the_patients(tmp_path):
    rows, metrics = bench(tmp_path, [NEVER_KNOWS, HALLUCINATES])
    assert {row["judge_status"] for row in rows["scored"]} == {None}
    assert (metrics[HALLUCINATES]["answers"], metrics[HALLUCINATES]["faithful"]) == (24, None)
    report = build_bench_report.fn(
        run_dirs=[str(tmp_path / "run")], out_dir=str(tmp_path / "report"), settings=None
    )
    csv_lines = (tmp_path / "report" / "scores.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in csv_lines] == ["patient", HALLUCINATES, NEVER_KNOWS]  # by name
    assert json.loads((tmp_path / "report" / "metrics.json").read_text())["patients"] == metrics
    report_md = (tmp_path / "report" / "report.md").read_text()
    assert f"| metric | {HALLUCINATES} | {NEVER_KNOWS} |" in report_md
    assert "| hallucination % | 100.0 | 0.0 |" in report_md
    assert report == str(tmp_path / "report")


def test_with_oracle_data_the_bench_asks_its_held_out_patients_its_held_out_pairs_too(tmp_path):
    cases = write_case_set(tmp_path / "cases")
    teacher = OracleDataConfig(models=[ModelSpec(model=OFFLINE_TEACHER)])
    pairs = run_inline(ORACLE_DATA, cases, tmp_path / "oracle", teacher)["scored"]
    write_oracle_dataset.fn(run_dir=tmp_path / "oracle", cases_dir=cases, config=teacher)
    held_out = {pair["case_id"] for pair in pairs if pair["split"] == "test"}
    rows, _ = bench(tmp_path, [PATIENT], oracle_data=tmp_path / "oracle", askings=1)
    assert {row["case_id"] for row in rows["solved"]} == held_out
    oracle_questions = [
        (row["kind"], row["question"]) for row in rows["solved"] if row["source"] == "oracle_test"
    ]
    test_pairs = [
        json.loads(line) for line in (tmp_path / "oracle" / "chat" / "test.jsonl").read_text().splitlines()
    ]
    assert oracle_questions == [(pair["kind"], pair["messages"][1]["content"]) for pair in test_pairs]


def test_consistency_needs_the_same_verdicts_on_every_asking():
    same = {"stance": "stated", "disclosed": True, "hallucinated": None}
    assert consistent([same, dict(same)]) is True
    assert consistent([same, {**same, "disclosed": False}]) is False
    assert consistent([same]) is None


def test_an_observation_is_disclosed_by_its_value_and_clinical_terms_are_whole_words():
    record = PatientRecord(
        reference_date=None, age_years=50, sex="male", conditions=(),
        observations=(RecordObservation(code="29463-7", display="Body Weight", value="81.26", unit="kg"),),
    )  # fmt: skip
    question = BenchQuestion(
        question_id="generated-0", source="generated", kind="positive", subject="observation", topic="weight",
        display="weight", question="Do you know your weight?",
    )  # fmt: skip
    lexicon = load_lexicon()
    assert mentions_fact(question, record, "I weighed 81.3 kg last time.", lexicon) is True
    assert mentions_fact(question, record, "About 90 kg.", lexicon) is False
    assert clinical_terms_in(
        "Acute pain, two fractures; my sinuses.", ["acute", "fracture", "sinusitis"]
    ) == [
        "acute",
        "fracture",
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "I had a fract\u00adure.",  # a soft hyphen
        "I had a \uff46\uff52\uff41\uff43\uff54\uff55\uff52\uff45.",  # full-width letters
        "I had a frac\u200bture.",  # a zero-width space
        "I had a frac-ture.",
        "I had a FRACTURE.",
    ],
)
def test_a_clinical_term_disguised_as_the_leak_check_reads_it_is_a_term(answer):
    assert (clinical_terms_in(answer, ["fracture"]), unread_letters(answer)) == (["fracture"], "")


def test_an_answer_the_rules_cannot_read_whole_is_neither_leak_free_nor_lay():
    record = PatientRecord(reference_date=None, age_years=50, sex="male", conditions=(), observations=())
    question = BenchQuestion(
        question_id="generated-0", source="generated", kind="negative", subject="condition", topic="59621000",
        display="Essential hypertension (disorder)", question="Do you have high blood pressure?",
    )  # fmt: skip
    verdicts = {
        answer: score_answer(question, record, answer, "symptoms", load_lexicon())
        for answer in ("No, never.", "\u041d\u0435\u0442, hypertension.", "\u041d\u0435\u0442.")
    }
    read = ("leaked", "lay", "unread_letters")
    assert [tuple(v[k] for k in read) for v in verdicts.values()] == [
        (False, True, ""),
        (True, False, "\u043d\u0435\u0442"),  # a leak and a clinical term found: read far enough
        (None, None, "\u043d\u0435\u0442"),
    ]
    rows = [{"status": "ok", "epoch": 0, "kind": "negative", "faithful": None, "consistent": None, **v}
            for v in verdicts.values()]  # fmt: skip
    metrics = patient_metrics(rows)
    assert (metrics["leak"], metrics["lay_language"], metrics["unread"]) == (0.5, 0.5, 2)


def test_a_run_scored_before_unread_letters_were_recorded_is_not_reported_as_read(tmp_path):
    bench(tmp_path, [NEVER_KNOWS], sample=SampleSpec(limit=1))
    run_dir = tmp_path / "run"
    scores = pq.read_table(run_dir / "patient_scores.parquet")
    pq.write_table(scores.drop_columns(["unread_letters"]), run_dir / "patient_scores.parquet")
    with pytest.raises(UserError, match="scored before its answers recorded unread_letters: run its"):
        build_bench_report.fn([str(run_dir)], str(tmp_path / "report"), BenchReportSettings())


def test_a_run_scored_by_the_first_stance_rule_is_not_reported(tmp_path):
    bench(tmp_path, [NEVER_KNOWS], sample=SampleSpec(limit=1))
    manifest_path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "stance_rules_version": 1}))
    with pytest.raises(UserError, match="scored before answers saying both a denial and a claim were"):
        build_bench_report.fn([str(tmp_path / "run")], str(tmp_path / "report"), BenchReportSettings())


def test_an_answer_saying_both_decides_neither_disclosure_nor_hallucination():
    record = PatientRecord(reference_date=None, age_years=50, sex="male", conditions=(), observations=())
    negative = BenchQuestion(
        question_id="generated-0", source="generated", kind="negative", subject="condition",
        topic="271807003", display="Eruption of skin (disorder)", question="Do you get rashes?",
    )  # fmt: skip
    verdicts = [
        score_answer(negative, record, answer, "symptoms", load_lexicon())
        for answer in ("No, but I get an itchy rash every day.", "No, never.", "Yes, every day.")
    ]
    read = ("stance", "disclosed", "hallucinated")
    assert [tuple(v[k] for k in read) for v in verdicts] == [
        ("mixed", None, None),
        ("denied", None, False),
        ("stated", None, True),
    ]
    rows = [{"status": "ok", "epoch": 0, "kind": "negative", "faithful": None, "consistent": None, **v}
            for v in verdicts]  # fmt: skip
    metrics = patient_metrics(rows)
    assert (metrics["hallucination"], metrics["mixed"], metrics["answers"]) == (0.5, 1, 3)


def test_a_patient_named_by_a_formula_is_written_as_text_and_its_metrics_as_numbers():
    metrics = {"=cmd|' /C calc'!A0": {"answers": 3, "disclosure": -0.5, "faithful": None}, "openai/x": {}}
    assert metrics_csv(metrics).splitlines() == [
        "patient,answers,disclosure,faithful",
        "'=cmd|' /C calc'!A0,3,-0.5,",
        "openai/x,,,",
    ]
