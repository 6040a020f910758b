"""The oracle's prompt files (teacher, served patient, patient-bench judge): each renders its golden file."""

from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, record_text
from tasks.benchmarks.snomed.oracle.config import TEACHER_PROMPT
from tasks.benchmarks.snomed.oracle.dataset import served_system_prompt
from tasks.benchmarks.snomed.oracle.plan import teacher_messages
from tasks.benchmarks.snomed.oracle.topics import PairTopic
from tasks.benchmarks.snomed.patient import load_lexicon
from tasks.benchmarks.snomed.patient_bench.config import JUDGE_RUBRIC
from tasks.benchmarks.snomed.patient_bench.solver import judge_messages
from tasks.llm.prompts import load_prompt
from tests.golden_files import assert_matches_golden, render_sections
from tests.snomed_fixtures import CASES

CASE = CASES[1]  # viral sinusitis (lay words) and prediabetes (none in the lexicon)


def test_the_served_patient_prompt_renders_its_golden_file_and_is_the_interviews_patient_prompt():
    prompt = load_prompt(ORACLE_PATIENT_PROMPT)
    values = {"disclosure_rule": DISCLOSURE_RULES["symptoms"], "record": record_text(CASE, "lay", "symptoms")}
    assert_matches_golden(prompt.version, render_sections(prompt, **values))
    # An interview with patient_prompt=oracle_patient_v1 (lay form) sends what the pairs were trained on.
    assert served_system_prompt(prompt, CASE, "symptoms") == prompt.render("system", **values)


def test_the_teacher_prompt_renders_its_golden_file():
    prompt, lexicon = load_prompt(TEACHER_PROMPT), load_lexicon()
    positive = PairTopic(
        kind="positive", subject="condition", topic="444814009", display="Viral sinusitis (disorder)"
    )
    negative = PairTopic(
        kind="negative", subject="condition", topic="65363002", display="Otitis media (disorder)"
    )
    rendered = [
        message["content"]
        for topic in (positive, negative)
        for message in teacher_messages(prompt, CASE, topic, "symptoms", lexicon)
    ]
    assert_matches_golden(prompt.version, "\n=====\n".join(rendered[:2] + rendered[3:]) + "\n")
    assert rendered[0] == rendered[2]  # one system prompt per case, whatever the topic


def test_the_judge_rubric_renders_its_golden_file():
    rubric = load_prompt(JUDGE_RUBRIC)
    messages = judge_messages(rubric, record_text(CASE, "named", "history"), "Any fever?", "I'm not sure.")
    assert_matches_golden(rubric.version, "\n=====\n".join(m["content"] for m in messages) + "\n")
