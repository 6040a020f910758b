import json

from tasks.benchmarks.consult.inquiry.templates import load_catalogue
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics import READY_MARKER
from tasks.benchmarks.consult.reference_logic import agent_reply, constraint_from_text, reported_aius
from tasks.benchmarks.consult.treatment import parse_plan
from tests.tasks.benchmarks.consult.test_metrics import KB, POLICY

CATALOGUE = load_catalogue()


def test_silent_agent_is_ready_at_once():
    messages = [
        {"role": "system", "content": "You are a doctor."},
        {"role": "user", "content": "I feel ill."},
    ]
    assert agent_reply("silent", messages, KB, POLICY, CATALOGUE) == READY_MARKER


def test_markov_agent_follows_the_greedy_sequence_without_repeats():
    # Greedy from START: chief_complaint (most counts), then after it (no counts) the template asked most
    # over all rows: fever_chills (13). With max_questions 2 it is then ready.
    messages = [{"role": "user", "content": "I feel ill."}]
    replies = []
    for _ in range(3):
        replies.append(agent_reply("markov", messages, KB, POLICY, CATALOGUE, max_questions=2))
        messages += [{"role": "assistant", "content": replies[-1]}, {"role": "user", "content": "Hmm."}]
    assert replies == ["What brings you in today?", "Have you had a fever?", READY_MARKER]


def test_exhaustive_agent_asks_in_catalogue_order():
    messages = [
        {"role": "user", "content": "I feel ill."},
        {"role": "assistant", "content": "What brings you in today?"},
        {"role": "user", "content": "A cough."},
    ]
    assert agent_reply("exhaustive", messages, KB, POLICY, CATALOGUE) == "When did it start?"


def test_reference_differential_from_the_conversation():
    messages = [
        {"role": "user", "content": "I've had a cough for a week, and I've had a fever for 3 days."},
        {"role": "assistant", "content": "Any wheezing?"},
        {"role": "user", "content": "No, nothing like that."},
        {"role": "user", "content": "Now give your ranked differential as JSON."},
    ]
    assert reported_aius(messages, KB) == {"cough", "fever"}
    # Scores: pneumonia cough + fever = 2; bronchitis cough = 1; asthma cough - fever = 0; eczema 0
    # (KB order breaks the tie).
    assert json.loads(agent_reply("markov", messages, KB, POLICY, CATALOGUE)) == [
        {"diagnosis": "Pneumonia", "icd11": "CA40", "core": True, "rationale": "reported: cough, fever"},
        {"diagnosis": "Acute bronchitis", "icd11": "CA42", "core": False, "rationale": "reported: cough"},
        {"diagnosis": "Asthma", "icd11": "CA23", "core": False, "rationale": "reported: cough"},
    ]


# --- plans and follow-ups, on the shipped KB ------------------------------------------------------------

REAL_KB = load_kb()
PNEUMONIA_HISTORY = [
    {"role": "system", "content": "You are a doctor."},
    {"role": "user", "content": "I've had a cough for a week."},
    {"role": "assistant", "content": "Any fever?"},
    {"role": "user", "content": "I've had a fever for 3 days."},
    {"role": "assistant", "content": "Any chest pain?"},
    {"role": "user", "content": "It stabs in my chest when I breathe in, on the right."},
    {"role": "assistant", "content": "Are you allergic to anything?"},
    {"role": "user", "content": "Yes, penicillin gives me a rash."},
    {"role": "assistant", "content": READY_MARKER},
    {"role": "user", "content": "Now give your ranked differential diagnosis."},
    {"role": "assistant", "content": '[{"diagnosis": "Pneumonia"}]'},
    {"role": "user", "content": "Now give your treatment plan for this patient."},
]
AMOXICILLIN = [
    {
        "drug": "amoxicillin",
        "dose": 500.0,
        "unit": "mg",
        "frequency_per_day": 3.0,
        "days": 5.0,
        "route": "oral",
    }
]
CLARITHROMYCIN = [
    {"drug": "clarithromycin", "dose": 500.0, "unit": "mg", "frequency_per_day": 2.0, "days": 5.0,
     "route": "oral"}
]  # fmt: skip


def reply(kind, messages):
    return agent_reply(kind, messages, REAL_KB, POLICY, load_catalogue())


def plan_items(text):
    return next(json.loads(line) for line in text.splitlines() if line.startswith("["))


def test_the_careless_agents_prescribe_the_first_first_line_drug_despite_the_allergy_the_patient_told():
    for kind in ("silent", "markov"):
        assert plan_items(reply(kind, PNEUMONIA_HISTORY)) == AMOXICILLIN


def test_the_careful_agent_prescribes_the_first_option_the_critic_passes_for_what_the_patient_said():
    text = reply("exhaustive", PNEUMONIA_HISTORY)
    assert plan_items(text) == CLARITHROMYCIN
    assert parse_plan(text, REAL_KB).generics == ("clarithromycin",)


def test_the_careful_agent_revises_for_a_new_constraint_and_the_careless_one_does_not():
    history = [*PNEUMONIA_HISTORY[:7], {"role": "user", "content": "No allergies."}, *PNEUMONIA_HISTORY[8:]]
    follow_up = [
        {"role": "assistant", "content": json.dumps(AMOXICILLIN)},
        {"role": "user", "content": "I've just remembered I'm allergic to penicillins."},
    ]
    assert plan_items(reply("exhaustive", history)) == AMOXICILLIN
    revised = reply("exhaustive", history + follow_up)
    assert revised.startswith("Thank you for telling me (I've just remembered I'm allergic to penicillins)")
    assert plan_items(revised) == CLARITHROMYCIN
    assert '"drug"' not in reply("markov", history + follow_up)


def test_a_question_is_answered_with_the_plans_dosing_and_the_regimen_advice():
    follow_up = [
        {"role": "assistant", "content": json.dumps(AMOXICILLIN)},
        {"role": "user", "content": "How exactly should I take it?"},
    ]
    advice = REAL_KB.condition("community_acquired_pneumonia").regimen.advice
    assert reply("markov", PNEUMONIA_HISTORY + follow_up) == (
        f"Take amoxicillin 500 mg (oral) 3 times a day for 5 days. {advice}"
    )


def test_constraints_are_read_from_the_follow_up_wordings():
    texts = {
        "I've just remembered I'm allergic to penicillins.": "allergy:penicillins",
        "I've just found out I'm pregnant.": "pregnancy",
        "I really struggle to swallow tablets.": "no_tablets",
        "I can't afford amoxicillin, is there anything else?": "cost:amoxicillin",
        "How exactly should I take it?": None,
    }
    assert {text: constraint_from_text(text, REAL_KB) for text in texts} == texts


def test_the_careful_agent_gives_a_liquid_to_a_patient_who_cannot_swallow_tablets():
    history = [*PNEUMONIA_HISTORY[:7], {"role": "user", "content": "No allergies."}, *PNEUMONIA_HISTORY[8:]]
    follow_up = [
        {"role": "assistant", "content": json.dumps(AMOXICILLIN)},
        {"role": "user", "content": "I really struggle to swallow tablets."},
    ]
    revised = reply("exhaustive", history + follow_up)
    assert plan_items(revised) == [{**AMOXICILLIN[0], "drug": "amoxicillin oral suspension"}]
    assert parse_plan(revised, REAL_KB).generics == ("amoxicillin",)


def test_the_careful_agent_turns_to_another_drug_of_the_regimens_classes_when_no_first_line_one_is_left():
    history = [*PNEUMONIA_HISTORY[:7], {"role": "user", "content": "No allergies."}, *PNEUMONIA_HISTORY[8:]]
    follow_ups = [
        {"role": "assistant", "content": json.dumps(AMOXICILLIN)},
        {"role": "user", "content": "I can't afford amoxicillin, is there anything else?"},
        {"role": "assistant", "content": json.dumps(CLARITHROMYCIN)},
        {"role": "user", "content": "I can't afford clarithromycin, is there anything else?"},
    ]
    revised = parse_plan(reply("exhaustive", history + follow_ups), REAL_KB)
    # Both first-line drugs are ruled out: the next penicillin of the KB at its usual dose.
    assert revised.generics == ("phenoxymethylpenicillin",)
