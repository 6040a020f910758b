"""The consultation benchmark's composite score (consult.md, "Composite"): every primary metric mapped to
[0, 1] higher-better (1 - x for the lower-is-better ones), averaged within its stage, then the four stage
scores averaged.

A metric undefined where it is averaged (POVR with no applicable pair, DDIV with no drug pair, DCSR with
no constraint follow-up) is left out of its stage; a stage whose every metric is undefined is None, and
so is the composite then: it is never an average over fewer than the four stages.

A stage is never scored from what was not read. The agent's unread output already scores the worst value
of each metric (metrics.py, metrics_plan.py). FQR is undefined only when no answer's grade could be read
(every judge reply unparseable after its re-ask, or every answer cut and left unjudged; or the case has
no follow-up, and DCSR is undefined too): the follow-up stage is then undefined (`REQUIRED`), not DCSR
alone, so an unreadable judge reply can never lift the stage to DCSR's value; the composite is undefined
with it, and the tables show the ungraded count beside it.
"""

from collections.abc import Mapping
from statistics import fmean
from typing import NamedTuple

from tasks.benchmarks.consult.contracts import STAGE_METRICS

LOWER_IS_BETTER = frozenset({"cprw", "povr", "ddiv", "pcr"})
# Metrics without which their stage is undefined: each is undefined only when its grades could not be read.
REQUIRED = frozenset({"fqr"})


class Composite(NamedTuple):
    history: float | None
    diagnosis: float | None
    treatment: float | None
    follow_up: float | None
    score: float | None


def stage_score(values: Mapping[str, float | None], names: tuple[str, ...]) -> float | None:
    """A stage's defined metrics in [0, 1] higher-better, averaged; None when none is defined or a
    `REQUIRED` one is not."""
    if any(values[name] is None for name in names if name in REQUIRED):
        return None
    mapped = [
        1 - value if name in LOWER_IS_BETTER else value
        for name in names
        if (value := values[name]) is not None
    ]
    return fmean(mapped) if mapped else None


def composite(values: Mapping[str, float | None]) -> Composite:
    """The stage scores and their mean from primary metric values (an episode's, or a model's means)."""
    stages = {stage: stage_score(values, names) for stage, names in STAGE_METRICS.items()}
    defined = [score for score in stages.values() if score is not None]
    return Composite(**stages, score=fmean(defined) if len(defined) == len(stages) else None)
