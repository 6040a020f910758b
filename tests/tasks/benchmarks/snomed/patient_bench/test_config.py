from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
from tasks.evals.config import ModelSpec, RunOverrides


def test_the_endpoint_choice_reaches_the_optional_judge_as_every_model():
    config = PatientBenchConfig(models=[ModelSpec(model="threadmed/patient")])
    chosen = config.with_overrides(
        RunOverrides(
            models=["oracle"],
            settings={"judge": {"model": "gpt-4o-mini"}},
            api_base="http://127.0.0.1:8080/v1",
            api_key_env="LOCAL_KEY",
        )
    )
    served = [(spec.model, spec.api_base, spec.api_key_env) for spec in (*chosen.models, chosen.judge)]
    assert served == [
        ("openai/oracle", "http://127.0.0.1:8080/v1", "LOCAL_KEY"),
        ("openai/gpt-4o-mini", "http://127.0.0.1:8080/v1", "LOCAL_KEY"),
    ]
    assert chosen.judge.price_model == "gpt-4o-mini"


def test_without_an_endpoint_choice_the_judge_is_as_given():
    config = PatientBenchConfig(models=[ModelSpec(model="threadmed/patient")])
    chosen = config.with_overrides(RunOverrides(settings={"judge": {"model": "gpt-4o-mini"}}))
    assert (chosen.judge.model, chosen.judge.api_base) == ("gpt-4o-mini", None)
