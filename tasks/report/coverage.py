"""Whether a run's rows hold every item it planned: per model under test and group (ThReadMed-QA's
conditions, the other benchmarks' epochs), the items (threads, cases) in its run tables against the number
its manifest records having planned. The leaderboard calls a run complete only on this; compare reads the
same tables (tasks/report/compare.py ComparisonSource)."""

from typing import Any, NamedTuple


class RunCoverage(NamedTuple):
    """What each model's rows lack, one line per group and table (`missing`: model -> lines, none when its
    rows hold every planned item), or why the rows could not be checked (`unverified`)."""

    missing: dict[str, list[str]]
    unverified: str | None = None


def epoch_groups(config: dict[str, Any]) -> list[str]:
    """The epochs a run's config plans (SNOMED, consultation), as its rows' group values read as text."""
    return [str(epoch) for epoch in range(config.get("epochs", 1))]


class Planned(NamedTuple):
    """What a run planned for each of its models: `count` items in each of `groups` (named `group_label`)."""

    models: list[str]
    group_label: str
    groups: list[str]
    count: int


def missing_items(planned: Planned, held: dict[tuple[str, str], set[str]], what: str) -> dict[str, list[str]]:
    """Per model, each planned group whose rows hold fewer than the planned items, as 'condition baseline: 1
    of 3 threads in responses.parquet' (`held`: (model, group) -> the items with rows; `what` names the items
    and the table). Models missing nothing are left out."""
    missing: dict[str, list[str]] = {}
    for model in planned.models:
        for group in planned.groups:
            count = len(held.get((model, group), set()))
            if count < planned.count:
                line = f"{planned.group_label} {group}: {count} of {planned.count} {what}"
                missing.setdefault(model, []).append(line)
    return missing
