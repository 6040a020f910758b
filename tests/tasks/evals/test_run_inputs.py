"""A run folder made with other inputs is named by what differs: the dataset and the settings of the run id,
never how calls are made."""

import json

import pytest

from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.core.preflight import UserError
from tasks.evals.config import ModelSpec
from tasks.evals.run_inputs import changed_inputs, check_same_inputs

NAMES = {"models": "--teacher", "positives_per_case": "--positives"}
TEACHER = OracleDataConfig(models=[ModelSpec(model="threadmed/oracle-teacher")])


def manifest_of(config: OracleDataConfig, fingerprint: str = "f" * 64) -> dict:
    """What a run's manifest.json records of its inputs (tasks/evals/outputs.py run_manifest)."""
    return {"run_id": "r1", "dataset": {"fingerprint": fingerprint}, "config": config.model_dump(mode="json")}


@pytest.mark.parametrize(
    ("new", "fingerprint", "changes"),
    [
        (TEACHER, "f" * 64, []),
        # how calls are made changes no reply: the same run, resumed
        (TEACHER.model_copy(update={"max_concurrency": 2, "max_cost_usd": 1.0}), "f" * 64, []),
        (
            TEACHER.model_copy(update={"positives_per_case": 2, "seed": 3}),
            "f" * 64,
            ["--positives 5 -> 2", "seed 0 -> 3"],
        ),
        (
            TEACHER.model_copy(update={"models": [ModelSpec(model="openai/gpt-4o-mini")]}),
            "0" * 64,
            [
                f"dataset {'f' * 12}… -> {'0' * 12}…",
                "--teacher threadmed/oracle-teacher -> openai/gpt-4o-mini",
            ],
        ),
    ],
    ids=["same", "call settings only", "counts and seed", "teacher and case set"],
)
def test_what_differs_is_named_by_its_option(new, fingerprint, changes):
    assert changed_inputs(manifest_of(TEACHER), new, fingerprint, NAMES) == changes


def test_a_folder_of_other_inputs_is_refused_and_a_new_or_unfinished_one_is_not(tmp_path):
    check_same_inputs(tmp_path / "new", TEACHER, "f" * 64, NAMES, "oracle data")  # no manifest: no run
    (tmp_path / "manifest.json").write_text(json.dumps(manifest_of(TEACHER)))
    check_same_inputs(tmp_path, TEACHER, "f" * 64, NAMES, "oracle data")
    fewer = TEACHER.model_copy(update={"positives_per_case": 1})
    with pytest.raises(UserError) as refused:
        check_same_inputs(tmp_path, fewer, "f" * 64, NAMES, "oracle data")
    assert (str(refused.value), refused.value.option) == (
        f"{tmp_path} holds oracle data made with other inputs (--positives 5 -> 1): pass --replace to "
        "replace it, or another --out folder",
        "--out",
    )
