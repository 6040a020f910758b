"""How a process of a Dask cluster reaches the cluster's scheduler, and plain values kept there that every
process changes one at a time (tasks/llm/cluster.py says what is kept there and why)."""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from distributed import Client, SchedulerPlugin
from distributed.protocol import pickle
from distributed.utils import sync

T = TypeVar("T")
logger = logging.getLogger(__name__)

NAME_PREFIX = "threadmed"


@dataclass(frozen=True)
class SchedulerLink:
    """How a process reaches its cluster's scheduler: a worker through its own connection, the flow through
    its client."""

    scheduler: Any  # an rpc to the scheduler
    loop: Any  # the event loop that rpc runs on
    worker: Any = None  # the worker of this process; None: the flow's client

    @classmethod
    def of_worker(cls, worker: Any) -> "SchedulerLink":
        return cls(worker.scheduler, worker.loop, worker)

    @classmethod
    def of_client(cls, client: Client) -> "SchedulerLink":
        return cls(client.scheduler, client.loop)

    def ask(self, handler: str, **arguments: Any) -> Any:
        """Call one of the scheduler's handlers from this thread (not the loop's) and wait for its answer."""
        return sync(self.loop, getattr(self.scheduler, handler), **arguments)

    def tell(self, handler: str, **arguments: Any) -> None:
        """Send one of the scheduler's stream handlers a message from this thread, not waiting for it: the
        worker's stream to the scheduler (Dask's own, batched) keeps the order of what the worker tells,
        and the scheduler handles each message with the worker's address as `worker`."""
        self.loop.add_callback(self.worker.batched_send, {"op": handler, **arguments})


class ValuesOnScheduler(SchedulerPlugin):
    """Named plain values kept on the scheduler, each change a rule run there whole: the scheduler runs one
    handler at a time on its event loop, so a change is one round trip and needs no lock. Rules come
    pickled, as Dask's own `run_on_scheduler` functions do: the scheduler runs this project's code."""

    name = f"{NAME_PREFIX}-values"
    idempotent = True  # registered by every run on the cluster: the first one keeps the values of all

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def start(self, scheduler: Any) -> None:
        scheduler.handlers[CHANGE_HANDLER] = self._change
        scheduler.handlers[READ_HANDLER] = self._read
        scheduler.handlers[SET_HANDLER] = self._set
        scheduler.stream_handlers[CHANGE_TOLD_HANDLER] = self._change_told

    def _change(self, name: str, rule: bytes, unset: Any) -> Any:
        value, result = pickle.loads(rule)(self._values.get(name, unset))
        self._values[name] = value
        return result

    def _change_told(self, name: str, rule: bytes, unset: Any, worker: str) -> None:
        """A change a worker told on its stream: what goes wrong is logged, as no one waits for it (and an
        error raised here would close the worker's stream)."""
        try:
            self._change(name, rule, unset)
        except Exception:
            logger.exception("a change of %s told by the worker %s failed", name, worker)

    def _read(self, name: str, unset: Any) -> Any:
        return self._values.get(name, unset)

    def _set(self, name: str, value: Any) -> None:
        """Set `name` to `value`; None forgets it."""
        if value is None:
            self._values.pop(name, None)
        else:
            self._values[name] = value


CHANGE_HANDLER = f"{NAME_PREFIX}_change_value"
CHANGE_TOLD_HANDLER = f"{NAME_PREFIX}_change_value_told"
READ_HANDLER = f"{NAME_PREFIX}_read_value"
SET_HANDLER = f"{NAME_PREFIX}_set_value"


class ValueChange(NamedTuple):
    """A change of a value on the scheduler, to be made by another of its handlers in the same round trip
    (`KeysOnScheduler` holding a call's key): the value's name, its rule pickled, what stands for the value
    never set (`ValuesOnScheduler`'s change handler takes it as it is)."""

    name: str
    rule: bytes
    unset: Any


class SchedulerValue:
    """A plain (msgpack-able) value on the cluster's scheduler that its processes change one at a time
    (`ValuesOnScheduler`)."""

    def __init__(self, link: SchedulerLink, name: str) -> None:
        self.name = name
        self._link = link

    def read(self, unset: Any) -> Any:
        """The value now; `unset` if it was never set."""
        return self._link.ask(READ_HANDLER, name=self.name, unset=unset)

    def change(self, rule: Callable[[Any], tuple[Any, T]], unset: Any) -> T:
        """Set the value to `rule(value)[0]` (`unset` stands for a value never set), no other change in
        between, and return `rule(value)[1]`. `rule` runs on the scheduler: it must pickle (no lock, client
        or limiter in its closure)."""
        return self._link.ask(CHANGE_HANDLER, **self.change_of(rule, unset)._asdict())

    def change_of(self, rule: Callable[[Any], tuple[Any, Any]], unset: Any) -> ValueChange:
        """`change`, as a message another request to the scheduler carries."""
        return ValueChange(self.name, pickle.dumps(rule), unset)

    def change_later(self, rule: Callable[[Any], tuple[Any, Any]], unset: Any) -> None:
        """`change`, not waiting for it from a worker: the scheduler applies it after every change this worker
        asked for before (the flow's client waits for it)."""
        if self._link.worker is None:
            self.change(rule, unset)
        else:
            self._link.tell(CHANGE_TOLD_HANDLER, **self.change_of(rule, unset)._asdict())

    def set(self, value: Any) -> None:
        self._link.ask(SET_HANDLER, name=self.name, value=value)

    def delete(self) -> None:
        self.set(None)
