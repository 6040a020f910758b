"""The consultation benchmark's composite score (consult.md, "Composite"): every primary metric mapped to
[0, 1] higher-better (1 - x for the lower-is-better ones), averaged within its stage, then the four stage
scores averaged.

A metric undefined where it is averaged (POVR with no applicable pair, DDIV with no drug pair, DCSR with
no constraint follow-up) is left out of its stage; a stage whose every metric is undefined is None, and
so is the composite then: it is never an average over fewer than the four stages.
"""

from collections.abc import Mapping
from statistics import fmean
from typing import NamedTuple

from tasks.benchmarks.consult.contracts import STAGE_METRICS

LOWER_IS_BETTER = frozenset({"cprw", "povr", "ddiv", "pcr"})


class Composite(NamedTuple):
    history: float | None
    diagnosis: float | None
    treatment: float | None
    follow_up: float | None
    score: float | None


def stage_score(values: Mapping[str, float | None], names: tuple[str, ...]) -> float | None:
    """A stage's defined metrics in [0, 1] higher-better, averaged; None when none is defined."""
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
