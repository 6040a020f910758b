from tasks.evals.config import EvalConfig, JudgeSpec, ModelSpec, RunOverrides
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.request import ProviderLimits


def test_the_run_id_ignores_how_calls_are_made():
    config = EvalConfig(models=[ModelSpec(model="openai/gpt-4o")])
    throttled = config.model_copy(
        update={"default_limits": ProviderLimits(max_concurrency=1), "max_workers": 3}
    )
    oracle_only = config.with_overrides(RunOverrides(settings={"conditions": ["oracle"]}))
    assert run_id_for(config, "abc") == run_id_for(throttled, "abc")
    assert run_id_for(config, "abc") != run_id_for(config, "abd")
    assert run_id_for(config, "abc") != run_id_for(oracle_only, "abc")


def test_a_roles_own_limits_leave_the_run_id_as_it_was():
    config = EvalConfig(models=[ModelSpec(model="openai/gpt-4o")])
    one_slot = ProviderLimits(max_concurrency=1)
    limited = EvalConfig(
        models=[ModelSpec(model="openai/gpt-4o", limits=one_slot)],
        judge=JudgeSpec(name="gpt-4o", model="openai/gpt-4o", limits=one_slot),
    )
    # Recorded before roles could carry limits: old run folders keep their run id.
    assert run_id_for(config, "abc") == run_id_for(limited, "abc") == "defd0353a5a5"


def test_a_plan_keeps_its_jobs_and_names_its_ledger(tmp_path):
    job = Job[ModelSpec, ModelSpec](solve=ModelSpec(model="a/b"), score=ModelSpec(model="c/d"))
    plan = RunPlan[ModelSpec, ModelSpec](
        run_id="r", run_dir=tmp_path, dataset_dir=tmp_path, dataset_fingerprint="f", jobs=[job]
    )
    assert plan.ledger_dir == tmp_path / "ledger"
    assert plan.jobs[0].solve.model == "a/b" and (plan.prompts, plan.manifest_facts, plan.notes) == (
        {},
        {},
        [],
    )


def test_a_judges_epoch_is_in_the_run_id_from_1_on():
    config = EvalConfig(models=[ModelSpec(model="openai/gpt-4o")])
    again = config.model_copy(update={"judge": config.judge.model_copy(update={"epoch": 1})})
    # Epoch 0 is every run recorded before judges had epochs: its run id stays as it was.
    assert run_id_for(config, "abc") == "defd0353a5a5" != run_id_for(again, "abc")
