"""The consultation benchmark's stage scores and composite (consult.md, "Metrics" and "Composite"), defined
once here and read by every view: the report, the run summary (and so the leaderboard), the Inspect export
and `compare`.

Of a set of episodes (a model's, one epoch's, a department's, a bootstrap resample's): each primary metric
is averaged over the completed episodes where it is defined ("all metrics are means over cases"), each
metric mapped to [0, 1] higher-better (1 - x for the lower-is-better ones) and averaged within its stage,
then the four stage scores averaged. It is not the mean of the episodes' own composites: a metric undefined
in one episode (POVR with no applicable pair, DDIV with no drug pair) weighs in its stage differently. One
episode's composite is the same definition over that one episode.

A metric undefined over the whole set is left out of its stage; a stage whose every metric is undefined is
undefined (None, NaN in arrays), and so is the composite then: it is never an average over fewer than the
four stages.

A stage is never scored from what was not read. The agent's unread output already scores the worst value
of each metric (metrics.py, metrics_plan.py). FQR is undefined only when no answer's grade could be read
(every judge reply unparseable after its re-ask, or every answer cut and left unjudged; or the case has
no follow-up, and DCSR is undefined too): the follow-up stage is then undefined (`REQUIRED`), not DCSR
alone, so an unreadable judge reply can never lift the stage to DCSR's value; the composite is undefined
with it, and the tables show the ungraded count beside it.
"""

from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.consult.contracts import PRIMARY_METRICS, STAGE_METRICS

LOWER_IS_BETTER = frozenset({"cprw", "povr", "ddiv", "pcr"})
# Metrics without which their stage is undefined: each is undefined only when its grades could not be read.
REQUIRED = frozenset({"fqr"})


class Composite(NamedTuple):
    history: float | None
    diagnosis: float | None
    treatment: float | None
    follow_up: float | None
    score: float | None


def stage_scores(values: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """A stage's score from its metrics' values (last axis in the order of `names`, NaN where undefined):
    the defined ones in [0, 1] higher-better, averaged; NaN when none is defined or a `REQUIRED` one is not.
    Vectorised over the leading axes (compare recomputes it on every bootstrap resample)."""
    values = np.asarray(values, dtype=float)
    lower = np.array([name in LOWER_IS_BETTER for name in names])
    mapped = np.where(lower, 1 - values, values)
    defined = ~np.isnan(mapped)
    count = defined.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(defined, mapped, 0.0).sum(axis=-1) / count
    required = np.array([name in REQUIRED for name in names])
    missing = (np.isnan(values) & required).any(axis=-1)
    return np.where((count == 0) | missing, np.nan, score)


def composite_scores(means: np.ndarray) -> np.ndarray:
    """The four stage scores and the composite (last axis in `Composite`'s order, NaN where undefined) from
    the primary metrics' means (last axis in PRIMARY_METRICS order, NaN where undefined)."""
    means = np.asarray(means, dtype=float)
    stages = np.stack(
        [
            stage_scores(means[..., [PRIMARY_METRICS.index(name) for name in names]], names)
            for names in STAGE_METRICS.values()
        ],
        axis=-1,
    )
    return np.concatenate([stages, stages.mean(axis=-1, keepdims=True)], axis=-1)


def _array(values: Mapping[str, float | None], names: tuple[str, ...]) -> np.ndarray:
    return np.array([np.nan if values[name] is None else values[name] for name in names], dtype=float)


def _value(score: float) -> float | None:
    return None if np.isnan(score) else float(score)


def stage_score(values: Mapping[str, float | None], names: tuple[str, ...]) -> float | None:
    """A stage's score from its metrics' values (None where undefined): `stage_scores` of one episode."""
    return _value(stage_scores(_array(values, names), names))


def composite(values: Mapping[str, float | None]) -> Composite:
    """The stage scores and the composite from primary metric values: one episode's, or the means of
    `metric_means` (`episodes_composite`)."""
    return Composite(*map(_value, composite_scores(_array(values, PRIMARY_METRICS))))


def completed(episodes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The episodes that count in a metric: a failed one (a provider error) is in none."""
    return [episode for episode in episodes if episode["status"] == "completed"]


def metric_mean(episodes: Iterable[Mapping[str, Any]], name: str) -> float | None:
    """A metric's mean over the completed episodes where it is defined; None where it is nowhere. fmean sums
    exactly, so the mean does not depend on the episodes' order."""
    values = [episode[name] for episode in completed(episodes) if episode[name] is not None]
    return fmean(values) if values else None


def metric_means(episodes: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    """Each primary metric's mean (`metric_mean`) over SCORES rows."""
    episodes = list(episodes)
    return {name: metric_mean(episodes, name) for name in PRIMARY_METRICS}


def episodes_composite(episodes: Iterable[Mapping[str, Any]]) -> Composite:
    """The stage scores and composite of a set of episodes (SCORES rows) as consult.md defines them: each
    primary metric averaged over the completed episodes where it is defined, then `composite`. The number
    every view shows."""
    return composite(metric_means(episodes))
