"""deployments/dead_runs.py: the heartbeat frequency read from prefect.yaml, fail closed; the automation it
derives; making it idempotently on a real API. The crash itself is tested end to end in
tests/flows/test_deployments.py (a real server and worker, kill -9)."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState

from deployments.dead_runs import (
    AUTOMATION_NAME,
    crash_window,
    dead_run_automation,
    ensure_automation,
    heartbeat_seconds,
    project_heartbeat_seconds,
)

SETTING = "definitions.work_pools.default.job_variables.env.PREFECT_FLOWS_HEARTBEAT_FREQUENCY"


def with_pool_env(env: Any) -> dict[str, Any]:
    """A prefect.yaml whose default work pool's job environment is `env`."""
    return {"definitions": {"work_pools": {"default": {"name": "p", "job_variables": {"env": env}}}}}


def with_heartbeat(value: Any) -> dict[str, Any]:
    return with_pool_env({"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": value})


MISSING = f"prefect.yaml sets no {SETTING}: flow runs would beat every 180 s (Prefect's default)"
REFUSED = [
    ({}, MISSING),
    ({"definitions": {"work_pools": {"default": {"name": "p"}}}}, MISSING),
    (with_pool_env({"OTHER": "1"}), MISSING),
    (with_pool_env(["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"]), MISSING),
    (with_heartbeat(30), f'{SETTING} is 30: give whole seconds as a string, e.g. "30"'),
    (with_heartbeat("30.0"), f"{SETTING} is '30.0': give whole seconds as a string, e.g. \"30\""),
    (with_heartbeat(" 30"), f"{SETTING} is ' 30': give whole seconds as a string, e.g. \"30\""),
    (with_heartbeat("٣٠"), f"{SETTING} is '٣٠': give whole seconds as a string, e.g. \"30\""),
    (with_heartbeat(None), f'{SETTING} is None: give whole seconds as a string, e.g. "30"'),
    (with_heartbeat("29"), f"{SETTING} is 29: Prefect accepts 30 s or more"),
]


@pytest.mark.parametrize(("prefect_yaml", "message"), REFUSED)
def test_a_missing_or_unusable_heartbeat_frequency_is_refused_naming_where_and_what(prefect_yaml, message):
    with pytest.raises(ValueError) as refused:
        heartbeat_seconds(prefect_yaml)
    assert str(refused.value) == message


def test_the_project_sends_a_heartbeat_every_30_s_and_crashes_runs_90_s_after_the_last():
    assert (project_heartbeat_seconds(), crash_window(30)) == (30, timedelta(seconds=90))


@given(st.integers(min_value=30, max_value=10**9))
def test_every_whole_number_of_seconds_from_30_is_read_and_its_window_is_three_beats(seconds):
    assert heartbeat_seconds(with_heartbeat(str(seconds))) == seconds
    assert crash_window(seconds) == timedelta(seconds=3 * seconds)


@given(st.integers(max_value=29))
def test_fewer_than_30_seconds_are_refused(seconds):
    with pytest.raises(ValueError):
        heartbeat_seconds(with_heartbeat(str(seconds)))


YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@given(st.one_of(YAML_VALUES, YAML_VALUES.map(with_heartbeat), YAML_VALUES.map(with_pool_env)))
def test_any_yaml_gives_a_frequency_of_30_s_or_more_or_a_value_error(prefect_yaml):
    try:
        assert heartbeat_seconds(prefect_yaml) >= 30
    except ValueError as refused:
        assert str(refused).startswith((f"prefect.yaml sets no {SETTING}:", f"{SETTING} is "))


def test_the_automation_crashes_a_deployment_run_three_beats_after_its_last_unless_it_ended():
    automation = dead_run_automation(45)
    trigger = automation.trigger.model_dump(exclude={"id"})
    assert trigger == {
        "type": "event",
        "match": {"prefect.resource.id": "prefect.flow-run.*"},
        "match_related": {
            "prefect.resource.role": "deployment",
            "prefect.resource.id": "prefect.deployment.*",
        },
        "after": {"prefect.flow-run.heartbeat"},
        "expect": {
            "prefect.flow-run.heartbeat",
            "prefect.flow-run.Completed",
            "prefect.flow-run.Failed",
            "prefect.flow-run.Cancelled",
            "prefect.flow-run.Crashed",
            "prefect.flow-run.TimedOut",
            "prefect.flow-run.AwaitingBatches",
        },
        "for_each": {"prefect.resource.id"},
        "posture": "Proactive",
        "threshold": 1,
        "within": timedelta(seconds=135),
    }
    assert automation.actions == [
        ChangeFlowRunState(
            state=StateType.CRASHED,
            message="No heartbeat for 135 s (one is sent every 45 s): the flow run's process died, with or "
            "without its worker. Retry the flow run or run the deployment again to finish it (an evaluation "
            "makes only the calls still missing).",
        )
    ]


@pytest.mark.usefixtures("prefect_harness")
def test_making_the_automation_again_updates_the_one_automation_and_removes_copies():
    with get_client(sync_client=True) as client:
        for automation in client.read_automations_by_name(AUTOMATION_NAME):
            client.delete_automation(automation.id)
        assert ensure_automation(client, dead_run_automation(60)) == "created"
        assert ensure_automation(client, dead_run_automation(30)) == "updated"
        client.create_automation(dead_run_automation(90))  # a copy, as `prefect automation create` makes
        assert ensure_automation(client, dead_run_automation(30)) == "updated"
        stored = client.read_automations_by_name(AUTOMATION_NAME)
    assert [(a.trigger.within, a.actions) for a in stored] == [
        (timedelta(seconds=90), dead_run_automation(30).actions)
    ]


def test_the_guide_quotes_the_crash_message_of_the_project_s_heartbeat():
    guide = (Path(__file__).resolve().parents[2] / "deployments" / "README.md").read_text()
    start = guide.index("### Runs whose process died\n")
    section = guide[start : guide.index("\n#", start + 1)]
    quoted = " ".join(line[2:] for line in section.splitlines() if line.startswith("> "))
    assert quoted == dead_run_automation(project_heartbeat_seconds()).actions[0].message
