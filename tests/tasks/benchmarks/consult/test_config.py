"""The consultation config's judge role: the offline judge by default, overridable per run like any role;
the default agent prompt as it renders (a golden file)."""

import os
from pathlib import Path

import pytest

from tasks.benchmarks.consult.config import AGENT_PROMPT, JUDGE_RUBRIC, OFFLINE_JUDGE, ConsultConfig
from tasks.evals.config import JudgeSpec, ModelSpec, RunOverrides, load_config
from tasks.evals.plan import run_id_for
from tasks.llm.prompts import load_prompt
from tasks.llm.request import ProviderLimits

AGENTS = [ModelSpec(model="openai/gpt-4o")]
DEPLOYMENTS = Path(__file__).resolve().parents[4] / "deployments"


def test_the_judge_is_the_offline_heuristic_with_the_fqr_rubric_by_default():
    config = ConsultConfig(models=AGENTS)
    assert (config.judge, config.judge_rubric(), config.roles()["judge"]) == (
        OFFLINE_JUDGE, JUDGE_RUBRIC, [OFFLINE_JUDGE]
    )  # fmt: skip


def test_a_run_may_name_another_judge_which_keeps_the_rubric_and_reasks_and_changes_the_run_id():
    config = ConsultConfig(
        models=AGENTS, judge=JudgeSpec(model="threadmed/consult-judge", rubric=Path("r.txt"))
    )
    judged = config.with_overrides(RunOverrides(roles={"judge": "openai/gpt-4o-mini"}))
    assert judged.judge == JudgeSpec(model="openai/gpt-4o-mini", rubric=Path("r.txt"), max_reasks=2)
    assert run_id_for(judged, "cases") != run_id_for(config, "cases")
    with pytest.raises(ValueError, match=r"^overrides\.roles\.patient: not a role; the roles here: judge$"):
        config.with_overrides(RunOverrides(roles={"patient": "openai/gpt-4o"}))


def test_a_judge_rubric_path_is_read_relative_to_the_config_file():
    config = ConsultConfig(models=AGENTS, judge=JudgeSpec(model="openai/gpt-4o", rubric=Path("r.txt")))
    assert config.with_paths_from(Path("/configs")).judge.rubric == Path("/configs/r.txt")


def test_the_agent_prompt_renders_its_golden_file():
    prompt = load_prompt(AGENT_PROMPT)
    rendered = "".join(f"=== {section} ===\n{prompt.render(section)}\n" for section in prompt.sections)
    golden = Path(__file__).parents[3] / "golden" / f"{prompt.version}.render.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered, encoding="utf-8")
    assert rendered == golden.read_text(encoding="utf-8"), f"changed: UPDATE_GOLDEN=1 pytest {__file__}"


def test_the_example_config_loads_with_llm_agents_a_reference_agent_and_an_llm_judge():
    config = load_config(DEPLOYMENTS / "consult.example.yaml", ConsultConfig)
    assert [(m.name, m.model) for m in config.models] == [
        ("gpt-4o", "openai/gpt-4o"),
        ("claude-haiku-4.5", "anthropic/claude-haiku-4-5-20251001"),
        ("markov-reference", "threadmed/consult-markov"),
    ]
    assert config.judge == JudgeSpec(
        name="gpt-4o-mini", model="openai/gpt-4o-mini", params={"temperature": 0}, max_reasks=1,
        estimated_reply_tokens=60,
    )  # fmt: skip
    assert config.judge_rubric() == JUDGE_RUBRIC
    assert (config.epochs, config.max_questions, config.max_reasks, config.per_turn) == (1, 12, 1, None)
    assert (config.sample.split, config.sample.limit) == ("test", 40)
    assert config.limits_for(config.models[2]) == ProviderLimits(max_concurrency=4)


def test_api_base_sends_every_agent_and_the_judge_there_but_offline_models_stay_in_process():
    # What `threadmed consult evaluate --api-base` says it does.
    config = ConsultConfig(
        models=[*AGENTS, ModelSpec(model="threadmed/consult-markov")],
        judge=JudgeSpec(model="openai/gpt-4o-mini"),
    ).with_overrides(RunOverrides(api_base="http://127.0.0.1:8000/v1"))
    assert [(spec.model, spec.api_base) for spec in [*config.models, config.judge]] == [
        ("openai/gpt-4o", "http://127.0.0.1:8000/v1"),
        ("threadmed/consult-markov", None),
        ("openai/gpt-4o-mini", "http://127.0.0.1:8000/v1"),
    ]
    offline = ConsultConfig(models=AGENTS).with_overrides(RunOverrides(api_base="http://127.0.0.1:8000/v1"))
    assert offline.judge == OFFLINE_JUDGE
