"""The consultation config's judge role: the offline judge by default, overridable per run like any role;
the default agent prompt as it renders (a golden file)."""

import os
from pathlib import Path

import pytest

from tasks.benchmarks.consult.config import AGENT_PROMPT, JUDGE_RUBRIC, OFFLINE_JUDGE, ConsultConfig
from tasks.evals.config import JudgeSpec, ModelSpec, RunOverrides
from tasks.evals.plan import run_id_for
from tasks.llm.prompts import load_prompt

AGENTS = [ModelSpec(model="openai/gpt-4o")]


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
    with pytest.raises(ValueError, match="no role"):
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
