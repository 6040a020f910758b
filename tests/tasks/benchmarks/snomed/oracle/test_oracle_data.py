"""oracle-data: pairs per case and kind, the split by patient, validation by reason, the output formats."""

import json

import pytest

from tasks.benchmarks.snomed.cases.loading import load_case_set
from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT
from tasks.benchmarks.snomed.leak import find_leaks
from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.benchmarks.snomed.oracle.dataset import served_system_prompt, write_oracle_dataset
from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER, OFFLINE_TEACHER_LABEL
from tasks.benchmarks.snomed.oracle.plan import run_vocabulary
from tasks.benchmarks.snomed.oracle.validation import leak_matcher, vocabulary_leak_names
from tasks.benchmarks.snomed.patient import leak_names_by_code, load_lexicon
from tasks.evals.config import EvaluationSettings, ModelSpec
from tasks.llm.offline import register_offline_model
from tasks.llm.prompts import load_prompt
from tests.snomed_fixtures import CASES, write_case_set
from tests.snomed_oracle_fixtures import run_inline

SPLITS = ("train", "validation", "test")


def _leaks_and_denies(messages, params):
    """Names the condition it is asked about (a leak), and denies what the record lacks (not 'not sure')."""
    request = messages[-1]["content"]
    if "does not hold" in request:
        return json.dumps({"question": "Have you ever had that?", "answer": "No, never."})
    return json.dumps(
        {"question": "What do you have?", "answer": f"I was told I have {request.rsplit(': ', 1)[1]}."}
    )


def _chatters(messages, params):
    return "Sure! Here is a question and an answer about this patient."


def _names_a_diagnosis_no_record_holds(messages, params):
    """The issue's teacher: each answer names type 2 diabetes, which no fixture record holds, and its code."""
    return json.dumps(
        {"question": "What do you have?", "answer": "I have Diabetes mellitus type 2 (44054006)."}
    )


def _names_it_without_the_code(messages, params):
    return json.dumps({"question": "What do you have?", "answer": "I was told I have diabetes."})


LEAKS_AND_DENIES = register_offline_model("test-oracle-teacher-leaks", _leaks_and_denies)
CHATTERS = register_offline_model("test-oracle-teacher-chatters", _chatters)
NAMES_DIABETES = register_offline_model(
    "test-oracle-teacher-names-diabetes", _names_a_diagnosis_no_record_holds
)
NAMES_DIABETES_ONLY = register_offline_model(
    "test-oracle-teacher-diabetes-no-code", _names_it_without_the_code
)


def make_data(tmp_path, teacher, **settings):
    cases = write_case_set(tmp_path / "cases")
    config = OracleDataConfig(models=[ModelSpec(model=teacher)], **settings)
    rows = run_inline(ORACLE_DATA, cases, tmp_path / "out", config)
    write_oracle_dataset.fn(run_dir=tmp_path / "out", cases_dir=cases, config=config)
    return rows["scored"], tmp_path / "out"


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_offline_teacher_writes_positive_and_negative_pairs_per_case_split_by_patient(tmp_path):
    pairs, out = make_data(tmp_path, OFFLINE_TEACHER)
    # Each fixture record has one condition with lay words and no observation kind the lexicon has whole (a
    # systolic pressure without the diastolic): one positive pair; two negatives, the paper's default.
    per_case = {(p["case_id"], p["kind"], p["status"]) for p in pairs}
    assert sorted(per_case) == [
        (case, kind, "kept") for case in ("p1", "p2", "p3") for kind in ("negative", "positive")
    ]
    assert [
        sum(p["case_id"] == case and p["kind"] == "negative" for p in pairs) for case in ("p1", "p2", "p3")
    ] == [2, 2, 2]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["kept"] == {split: {"positive": 1, "negative": 2} for split in SPLITS}
    assert manifest["rejected"] == {}
    assert manifest["teacher"]["offline"] is True
    assert manifest["teacher"]["label"] == OFFLINE_TEACHER_LABEL
    assert (manifest["seed"], manifest["positives_per_case"], manifest["negatives_per_case"]) == (0, 5, 2)
    assert set(manifest["prompts"]) == {"oracle_teacher_v1", "oracle_patient_v1"}
    assert OFFLINE_TEACHER_LABEL in (out / "README.md").read_text()
    # Split by patient: every case in exactly one split, its chat and alpaca records alike.
    chat = {split: jsonl(out / "chat" / f"{split}.jsonl") for split in SPLITS}
    alpaca = {split: jsonl(out / "alpaca" / f"{split}.jsonl") for split in SPLITS}
    cases_by_split = [{r["case_id"] for r in chat[split]} for split in SPLITS]
    assert sorted(case for cases in cases_by_split for case in cases) == ["p1", "p2", "p3"]
    assert [{r["case_id"] for r in alpaca[split]} for split in SPLITS] == cases_by_split
    # The system message is the served prompt with the record; no answer names a condition; negatives
    # do not know.
    prompt = load_prompt(ORACLE_PATIENT_PROMPT)
    cases = {case.case_id: case for case in load_case_set(tmp_path / "cases")}
    for split in SPLITS:
        for record, form in zip(chat[split], alpaca[split], strict=True):
            case = cases[record["case_id"]]
            system, question, answer = (m["content"] for m in record["messages"])
            assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant"]
            assert system == form["instruction"] == served_system_prompt(prompt, case, "symptoms")
            assert (question, answer) == (form["input"], form["output"])
            assert record["split"] == split
            assert find_leaks(answer, case.gold_codes, case.gold_displays) == ()
            assert (answer_stance(answer) == "not_known") == (record["kind"] == "negative")


def test_the_counts_per_case_are_parameters(tmp_path):
    pairs, _ = make_data(tmp_path, OFFLINE_TEACHER, positives_per_case=0, negatives_per_case=4)
    assert sorted((p["case_id"], p["kind"]) for p in pairs) == [
        (c, "negative") for c in ("p1", "p2", "p3") for _ in range(4)
    ]


def test_a_teacher_that_leaks_and_denies_has_every_pair_rejected_by_reason_and_none_written(tmp_path):
    pairs, out = make_data(tmp_path, LEAKS_AND_DENIES)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rejected"] == {"leak": 3, "negative_not_unsure": 6}
    assert manifest["counts"]["kept"] == {split: {"positive": 0, "negative": 0} for split in SPLITS}
    assert manifest["teacher"]["offline"] is False and manifest["teacher"]["label"] is None
    for fmt in ("chat", "alpaca"):
        assert [(out / fmt / f"{split}.jsonl").read_text() for split in SPLITS] == ["", "", ""]
    assert {p["reason"] for p in pairs if p["kind"] == "positive"} == {"leak"}


@pytest.mark.parametrize("disclosure", ["symptoms", "history"])
def test_an_answer_naming_a_diagnosis_and_code_the_record_lacks_is_a_leak_under_any_disclosure(
    tmp_path, disclosure
):
    pairs, out = make_data(tmp_path, NAMES_DIABETES, disclosure=disclosure)
    assert not any(
        c.code == "44054006" for case in load_case_set(tmp_path / "cases") for c in case.conditions
    )
    # 9 pairs (one positive, two negatives a case); under history every condition is a positive topic: 11.
    asked = {"symptoms": 9, "history": 11}[disclosure]
    assert [(p["status"], p["reason"]) for p in pairs] == [("rejected", "leak")] * asked
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["rejected"], manifest["counts"]["kept"]) == (
        {"leak": asked},
        {split: {"positive": 0, "negative": 0} for split in SPLITS},
    )
    assert f"- leak: {asked}" in (out / "README.md").read_text()


def test_under_history_an_answer_may_name_a_diagnosis_but_not_its_code(tmp_path):
    _, out = make_data(tmp_path, NAMES_DIABETES_ONLY, disclosure="history")
    # Named, not coded: kept where the answer states something (positives), not where it must not know.
    assert json.loads((out / "manifest.json").read_text())["rejected"] == {"negative_not_unsure": 6}
    symptoms_pairs, _ = make_data(tmp_path / "symptoms", NAMES_DIABETES_ONLY)
    assert {p["reason"] for p in symptoms_pairs} == {"leak"}


@pytest.mark.parametrize("disclosure", ["symptoms", "history"])
def test_the_manifest_and_the_card_state_what_the_leak_check_read(tmp_path, disclosure):
    _, out = make_data(tmp_path, OFFLINE_TEACHER, disclosure=disclosure)
    names = vocabulary_leak_names(run_vocabulary(CASES), leak_names_by_code(load_lexicon()))
    conditions = len(run_vocabulary(CASES))
    assert json.loads((out / "manifest.json").read_text())["leak_check"] == {
        "names_checked": disclosure == "symptoms",
        "conditions": conditions,
        "names": leak_matcher(names).name_count,
        "min_digit_run": 6,
        "leak_names_sha256": names.sha256,
    }
    card = " ".join((out / "README.md").read_text().split())
    digits = "any run of 6 or more digits (a SNOMED CT code has 6 to 18)"
    if disclosure == "symptoms":
        assert (
            f"when it named any of the {conditions} conditions of the run's vocabulary (every condition code "
            "of the Synthea modules, plus every condition of the source cases), whether or not the patient's "
            f"record holds it: one of their {leak_matcher(names).name_count} names"
        ) in card
        assert f"or one of their {conditions} codes; or when it held {digits}." in card
    else:
        assert (
            f"an answer holding {digits} was rejected as `leak`, which covers the {conditions} codes" in card
        )


def test_a_teacher_that_does_not_reply_json_has_every_pair_rejected_as_unparseable(tmp_path):
    _, out = make_data(tmp_path, CHATTERS)
    assert json.loads((out / "manifest.json").read_text())["rejected"] == {"unparseable": 9}


def test_the_hugging_face_loader_reads_both_forms(tmp_path):
    datasets = pytest.importorskip(
        "datasets",
        reason="`datasets` comes with the `oracle` extra (pip install -e '.[oracle]'); json is checked above",
    )
    _, out = make_data(tmp_path, OFFLINE_TEACHER)
    for fmt in ("chat", "alpaca"):
        files = {split: str(out / fmt / f"{split}.jsonl") for split in SPLITS}
        loaded = datasets.load_dataset("json", data_files=files)
        assert {split: loaded[split].num_rows for split in SPLITS} == {split: 3 for split in SPLITS}


def test_every_case_is_validated_against_one_vocabulary_holding_its_conditions_and_negative_topics(tmp_path):
    cases = write_case_set(tmp_path / "cases")
    config = OracleDataConfig(models=[ModelSpec(model=OFFLINE_TEACHER)])
    settings = EvaluationSettings[OracleDataConfig](
        dataset_dir=cases, run_dir=tmp_path / "out", config=config
    )
    jobs = [job.score for job in ORACLE_DATA.plan(settings).jobs]
    names = jobs[0].leak_names
    assert all(job.leak_names is names for job in jobs)  # one object, its matcher compiled once
    assert names.codes == tuple(run_vocabulary(CASES))
    record_codes = {case.case_id: {c.code for c in case.conditions} for case in CASES}
    for job in jobs:
        asked = {topic.topic for topic in job.topics if topic.kind == "negative"}
        assert len(asked) == 2 and not asked & record_codes[job.case_id]
        assert record_codes[job.case_id] | asked <= set(names.codes)
