"""What a command shows and checks of a benchmark before it plans a run: its name and title, its config and
its input checks. Light on purpose (no litellm, no Prefect): a command prints what it will do, the inputs
checked, before it imports the benchmark's solvers and walks the plan, which take seconds."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks.evals.config import RunConfig


@dataclass(frozen=True)
class BenchmarkCard:
    """A benchmark's name, title, config and input checks (its `Benchmark` record holds the rest)."""

    name: str
    title: str
    # The run config: roles (model under test, judge, ...), conditions, sample, limits.
    config_model: type[RunConfig]
    # Its input folder (a dataset build, a case set) -> None, or UserError naming what it lacks: a command
    # runs it before any flow starts, the evaluate flow before it touches the run folder. None: not checked.
    check_inputs: Callable[[Path], None] | None = None
    # (its input folder, the run's config) -> None, or UserError when the config's sample of that folder is
    # empty (a split with no case): checked with the inputs, so no run ends Completed having done nothing.
    check_sample: Callable[[Path, RunConfig], None] | None = None
