"""Mark a deployment's flow run Crashed when its process died: Prefect's automation over flow-run heartbeats.

    PREFECT_API_URL=http://127.0.0.1:4200/api python -m deployments.dead_runs    # from the project root

A flow run whose worker and flow process both die (kill -9, the out-of-memory killer, a lost machine)
stays Running for good: nothing is left to report its end, so `prefect deployment run --watch` never
returns and the run cannot be retried. Every flow run sends a heartbeat event every
PREFECT_FLOWS_HEARTBEAT_FREQUENCY seconds, set once for all deployments in prefect.yaml's work pool
`env`. This creates (or brings up to date: running it again changes nothing) one automation that marks a
deployment's run Crashed, with a message saying its process died, once `MISSED_HEARTBEATS` heartbeats in
a row did not arrive: Prefect's own guide to "zombie" flow runs, a proactive event trigger.

Only runs of deployments are watched: a `threadmed` command sent to this server (PREFECT_API_URL set) beats
at Prefect's default of every 180 s, which the bound would take for a death.
"""

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

from tasks.evals.batch_runs import AWAITING_BATCHES

PREFECT_YAML = Path(__file__).resolve().parents[1] / "prefect.yaml"
HEARTBEAT_SETTING = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"
HEARTBEAT_PATH = ("definitions", "work_pools", "default", "job_variables", "env", HEARTBEAT_SETTING)
MINIMUM_HEARTBEAT_S = 30  # Prefect 3.8.8 refuses a smaller PREFECT_FLOWS_HEARTBEAT_FREQUENCY
# Three missed beats, as Prefect's guide does: one late event (a busy server) does not crash a live run.
MISSED_HEARTBEATS = 3
AUTOMATION_NAME = "threadmed: crash runs whose heartbeats stopped"
HEARTBEAT_EVENT = "prefect.flow-run.heartbeat"
# A run that ends sends the event of its final state, named by the state's name, instead of a heartbeat:
# Prefect's names (TimedOut is a flow time-out's Failed state) and a batch run's Completed one. A final
# state missing here is harmless: the server refuses to mark a run that ended Crashed.
FINAL_STATE_EVENTS = frozenset(
    f"prefect.flow-run.{state}"
    for state in ("Completed", "Failed", "Cancelled", "Crashed", "TimedOut", AWAITING_BATCHES)
)
Outcome = Literal["created", "updated"]


def heartbeat_seconds(prefect_yaml: dict[str, Any]) -> int:
    """The heartbeat frequency prefect.yaml's default work pool gives flow runs, in seconds.

    ValueError naming the place and the value when it is missing, not a whole number written as a string
    (an environment variable's value), or below Prefect's minimum.
    """
    where = ".".join(HEARTBEAT_PATH)
    node: Any = prefect_yaml
    for key in HEARTBEAT_PATH:
        if not isinstance(node, dict) or key not in node:
            raise ValueError(
                f"prefect.yaml sets no {where}: flow runs would beat every 180 s (Prefect's default)"
            )
        node = node[key]
    if not isinstance(node, str) or not node.isascii() or not node.isdigit():
        raise ValueError(f'{where} is {node!r}: give whole seconds as a string, e.g. "30"')
    seconds = int(node)
    if seconds < MINIMUM_HEARTBEAT_S:
        raise ValueError(f"{where} is {seconds}: Prefect accepts {MINIMUM_HEARTBEAT_S} s or more")
    return seconds


def project_heartbeat_seconds(path: Path = PREFECT_YAML) -> int:
    """`heartbeat_seconds` of the project's prefect.yaml."""
    return heartbeat_seconds(yaml.safe_load(path.read_text()))


def crash_window(heartbeat_s: int) -> timedelta:
    """How long after a run's last heartbeat it is marked Crashed (Prefect adds up to 5 s of evaluation)."""
    return timedelta(seconds=MISSED_HEARTBEATS * heartbeat_s)


def dead_run_automation(heartbeat_s: int) -> AutomationCore:
    """After each heartbeat of a deployment's flow run, expect another one or the run's end within
    `crash_window`; when neither comes, set the run Crashed with a message naming the cause."""
    window = int(crash_window(heartbeat_s).total_seconds())
    message = (
        f"No heartbeat for {window} s (one is sent every {heartbeat_s} s): the flow run's process died, "
        "with or without its worker. Retry the flow run or run the deployment again to finish it (an "
        "evaluation makes only the calls still missing)."
    )
    return AutomationCore(
        name=AUTOMATION_NAME,
        description=(
            f"Marks a deployment's flow run Crashed when {MISSED_HEARTBEATS} heartbeats in a row are missing "
            f"({HEARTBEAT_SETTING}={heartbeat_s} in prefect.yaml). Created by deployments/dead_runs.py."
        ),
        trigger=EventTrigger(
            after={HEARTBEAT_EVENT},
            expect={HEARTBEAT_EVENT, *FINAL_STATE_EVENTS},
            match={"prefect.resource.id": "prefect.flow-run.*"},
            match_related={
                "prefect.resource.role": "deployment",
                "prefect.resource.id": "prefect.deployment.*",
            },
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=crash_window(heartbeat_s),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, message=message)],
    )


def ensure_automation(client: SyncPrefectClient, automation: AutomationCore) -> Outcome:
    """Make `automation` the one automation of its name on the server: create it, or update the existing
    one in place (and delete any copies a repeated `prefect automation create` left)."""
    existing = client.read_automations_by_name(automation.name)
    if not existing:
        client.create_automation(automation)
        return "created"
    keep, *copies = existing
    client.update_automation(keep.id, automation)
    for copy in copies:
        client.delete_automation(copy.id)
    return "updated"


def main() -> None:
    heartbeat_s = project_heartbeat_seconds()
    with get_client(sync_client=True) as client:
        outcome = ensure_automation(client, dead_run_automation(heartbeat_s))
    window = int(crash_window(heartbeat_s).total_seconds())
    print(
        f"{outcome} automation {AUTOMATION_NAME!r}: a deployment's flow run is marked Crashed {window} s "
        f"after its last heartbeat (one every {heartbeat_s} s)"
    )


if __name__ == "__main__":
    main()
