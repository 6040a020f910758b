"""The episode's stages with a scripted agent (no call layer): history, diagnosis, treatment with its
re-ask, follow-ups with a revision re-ask, the MESSAGES rows of it all, and the episode the scorer reads."""

from datetime import UTC, datetime

from tasks.benchmarks.consult.case import FollowUp
from tasks.benchmarks.consult.config import AGENT_PROMPT
from tasks.benchmarks.consult.episode import Episode, FollowUpTurn, HistoryTurn, PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.scorer import episode_from_messages
from tasks.benchmarks.consult.solver import EpisodeJob, EpisodePrompts, SimulatorSettings, run_episode
from tasks.evals.config import ModelSpec
from tasks.llm.ledger import CallRecord
from tasks.llm.prompts import load_prompt
from tasks.llm.request import CallOptions
from tests.tasks.benchmarks.consult.test_simulator import CASE, RESPIRATORY

PROMPT = load_prompt(AGENT_PROMPT)
SECTIONS = ("system", "diagnosis", "reask", "treatment", "treatment_reask", "revision_reask")
PROMPTS = EpisodePrompts(version=PROMPT.version, **{name: PROMPT.render(name) for name in SECTIONS})
ALLERGY = "I've just remembered I'm allergic to penicillins."
QUESTION = "How exactly should I take it?"
FOLLOWED = CASE.model_copy(
    update={
        "follow_ups": (
            FollowUp(kind="constraint", text=ALLERGY, constraint="allergy:penicillins", core=True),
            FollowUp(kind="question", text=QUESTION),
        )
    }
)
BRONCHITIS = '[{"diagnosis": "Acute bronchitis", "icd11": "CA42", "core": true, "rationale": "cough"}]'
AMOXICILLIN = (
    '[{"drug": "amoxicillin", "dose": 500, "unit": "mg", "frequency_per_day": 3, "days": 5, "route": "oral"}]'
)
DOXYCYCLINE = (
    '[{"drug": "doxycycline", "dose": 100, "unit": "mg", "frequency_per_day": 1, "days": 5, "route": "oral"}]'
)
BROKEN_PLAN = 'Switch to [{"drug": "doxycycline", "dose": 100'
ANSWER = "Take it three times a day with water."


def agent(last: str, plan_reply: str = AMOXICILLIN) -> str | None:
    """The scripted agent's reply to the last user message; None: the call fails."""
    return {
        CASE.opening: RESPIRATORY,
        PROMPTS.diagnosis: BRONCHITIS,
        PROMPTS.treatment: "I'd give an antibiotic.",
        PROMPTS.treatment_reask: f"{plan_reply}\nRest and fluids.",
        ALLERGY: BROKEN_PLAN,
        PROMPTS.revision_reask: DOXYCYCLINE,
        QUESTION: ANSWER,
    }.get(last, "<Ready to diagnose>")


def scripted(reply=agent, fail_on: str | None = None):
    calls = []

    def call(request):
        last = request.messages[-1]["content"]
        calls.append(request.messages)
        now = datetime.now(UTC)
        failed = last == fail_on
        return CallRecord(
            key=f"k{len(calls)}", model=request.model, status="failed" if failed else "ok",
            text=None if failed else reply(last), error_kind="server_error" if failed else None,
            error="503" if failed else None, started_at=now, finished_at=now,
        )  # fmt: skip

    return call, calls


def job(case=FOLLOWED, max_reasks=1) -> EpisodeJob:
    return EpisodeJob(
        run_id="r1", agent=ModelSpec(name="doc", model="openai/doc"), options=CallOptions(provider="openai"),
        prompts=PROMPTS, simulator=SimulatorSettings(), max_questions=3, max_reasks=max_reasks,
        diagnosis_match_threshold=90.0, case=case, epoch=0,
    )  # fmt: skip


def layout(rows):
    return [(r["turn"], r["role"], r["stage"], r.get("follow_up"), r["status"]) for r in rows]


def test_the_episode_asks_for_a_plan_then_raises_each_follow_up_and_reasks_what_does_not_parse():
    call, calls = scripted()
    rows = run_episode(job(), call)
    assert layout(rows) == [
        (0, "patient", "history", None, "simulated"),
        (1, "agent", "history", None, "ok"),
        (1, "patient", "history", None, "simulated"),
        (2, "agent", "history", None, "ok"),
        (3, "agent", "diagnosis", None, "ok"),
        (4, "agent", "treatment", None, "ok"),
        (5, "agent", "treatment", None, "ok"),  # the re-ask: the first reply had no plan
        (6, "patient", "follow_up", 0, "simulated"),
        (6, "agent", "follow_up", 0, "ok"),
        (
            7,
            "agent",
            "follow_up",
            0,
            "ok",
        ),  # the revision's re-ask: the answer tried a plan that did not parse
        (8, "patient", "follow_up", 1, "simulated"),
        (8, "agent", "follow_up", 1, "ok"),
    ]
    assert [r["text"] for r in rows if r["stage"] == "follow_up"] == [
        ALLERGY, BROKEN_PLAN, DOXYCYCLINE, QUESTION, ANSWER
    ]  # fmt: skip
    # The conversation carries on: the last request holds every stage, re-asks included.
    plan = f"{AMOXICILLIN}\nRest and fluids."
    assert [m["content"] for m in calls[-1][-11:]] == [
        PROMPTS.diagnosis, BRONCHITIS, PROMPTS.treatment, "I'd give an antibiotic.", PROMPTS.treatment_reask,
        plan, ALLERGY, BROKEN_PLAN, PROMPTS.revision_reask, DOXYCYCLINE, QUESTION,
    ]  # fmt: skip


def test_the_scorer_reads_the_plan_the_follow_up_answers_and_the_revised_plan_from_the_rows():
    call, _ = scripted()
    episode = episode_from_messages(FOLLOWED, run_episode(job(), call), load_kb(), 90.0)
    doxycycline = TreatmentPlan(
        items=(PlanItem(drug="doxycycline", generic="doxycycline", ingredients=("doxycycline",), dose=100,
                        unit="mg", frequency_per_day=1, days=5, route="oral"),),
        advice="",
    )  # fmt: skip
    assert episode.model_copy(update={"differential": ()}) == Episode(
        case_id="c1",
        turns=(
            HistoryTurn(
                turn=1,
                question=RESPIRATORY,
                template="respiratory",
                revealed=("cough", "productive_sputum", "wheeze"),
            ),
        ),
        plan=TreatmentPlan(
            items=(
                PlanItem(
                    drug="amoxicillin",
                    generic="amoxicillin",
                    ingredients=("amoxicillin",),
                    dose=500,
                    unit="mg",
                    frequency_per_day=3,
                    days=5,
                    route="oral",
                ),
            ),
            advice="Rest and fluids.",
        ),
        follow_ups=(
            FollowUpTurn(index=0, answer=DOXYCYCLINE, revised_plan=doxycycline),  # the re-ask's reply is kept
            FollowUpTurn(index=1, answer=ANSWER),
        ),
    )


def test_a_plan_and_a_revision_that_never_parse_are_unparseable_and_the_follow_ups_still_asked():
    def never(last):
        return {PROMPTS.revision_reask: "Sorry.", PROMPTS.treatment_reask: "Antibiotics."}.get(last) or agent(
            last
        )

    call, _ = scripted(never)
    rows = run_episode(job(), call)
    assert [r["stage"] for r in rows if r["role"] == "agent"].count("treatment") == 2
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    assert (episode.plan_parse, episode.plan) == ("unparseable", TreatmentPlan())
    assert episode.follow_ups == (
        FollowUpTurn(index=0, answer="Sorry.", revision_parse="unparseable"),
        FollowUpTurn(index=1, answer=ANSWER),
    )


def test_a_plan_cut_at_max_tokens_is_re_asked_and_unparseable_when_the_re_ask_is_cut_too():
    def plans_at_once(last):
        return AMOXICILLIN if last == PROMPTS.treatment else agent(last)

    call, _ = scripted(plans_at_once)

    def cut_plans(request):  # the plan reads whole, but what came after it at max_tokens is unknown
        record = call(request)
        plan = request.messages[-1]["content"] in (PROMPTS.treatment, PROMPTS.treatment_reask)
        return record.model_copy(update={"finish_reason": "length" if plan else "stop"})

    rows = run_episode(job(), cut_plans)
    treatment = [(r["text"], r["finish_reason"]) for r in rows if r["stage"] == "treatment"]
    assert treatment == [(AMOXICILLIN, "length"), (f"{AMOXICILLIN}\nRest and fluids.", "length")]
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    assert (episode.plan_parse, episode.plan) == ("unparseable", TreatmentPlan())


def test_a_differential_cut_at_max_tokens_is_re_asked_and_unparseable_when_the_re_ask_is_cut_too():
    call, _ = scripted()

    def cut_differentials(request):  # the list reads whole, but it may have gone on at max_tokens
        record = call(request)
        asked = request.messages[-1]["content"] in (PROMPTS.diagnosis, PROMPTS.reask)
        return record.model_copy(update={"finish_reason": "length" if asked else "stop"})

    rows = run_episode(job(), cut_differentials)
    assert [r["finish_reason"] for r in rows if r["stage"] == "diagnosis"] == ["length", "length"]
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    assert (episode.diagnosis_parse, episode.differential) == ("unparseable", ())
    whole = episode_from_messages(FOLLOWED, run_episode(job(), scripted()[0]), load_kb(), 90.0)
    assert whole.diagnosis_parse == "ok" and whole.differential != ()


def test_a_revision_cut_at_max_tokens_is_unparseable():
    call, _ = scripted()
    rows = [
        {**r, "finish_reason": "length"} if r["text"] == DOXYCYCLINE else r for r in run_episode(job(), call)
    ]
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    assert episode.follow_ups[0] == FollowUpTurn(
        index=0, answer=DOXYCYCLINE, cut=True, revision_parse="unparseable"
    )


def test_without_reasks_an_unparsed_revision_is_not_asked_again():
    call, _ = scripted()
    rows = run_episode(job(max_reasks=0), call)
    assert [(r["turn"], r["role"], r.get("follow_up")) for r in rows if r["stage"] == "follow_up"] == [
        (5, "patient", 0), (5, "agent", 0), (6, "patient", 1), (6, "agent", 1)
    ]  # fmt: skip


def test_a_failed_call_ends_the_episode_with_its_row():
    call, _ = scripted(fail_on=QUESTION)
    rows = run_episode(job(), call)
    assert layout(rows)[-2:] == [
        (8, "patient", "follow_up", 1, "simulated"),
        (8, "agent", "follow_up", 1, "failed"),
    ]


def test_a_ready_marker_inside_a_sentence_ends_the_history():
    def polite(last):
        return (
            agent(last)
            if last == CASE.opening
            else agent(last).replace(
                "<Ready to diagnose>", "Thank you, I have what I need. < ready to diagnose >"
            )
        )

    call, _ = scripted(polite)
    rows = run_episode(job(), call)
    assert layout(rows)[:5] == [
        (0, "patient", "history", None, "simulated"),
        (1, "agent", "history", None, "ok"),
        (1, "patient", "history", None, "simulated"),
        (2, "agent", "history", None, "ok"),
        (3, "agent", "diagnosis", None, "ok"),
    ]
