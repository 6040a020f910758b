"""A judge panel's grade and how its judges differ, for any benchmark whose scores are a judge's grades.

Pure functions on (answers x graders) arrays of grades, NaN where a grader gave none. A judge is a judge
model with its rubric (its prompts): one vote. A grader is one sample of a judge: a run of it at some
sampling params (temperature...) and epoch. A judge's vote on an answer is the median of its samples' grades.
"""

from collections.abc import Sequence
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np

from tasks.report.stats import Undefined

CONSENSUS_RULE = (
    "One judge is a judge model with its rubric, and has one vote: its samples (runs of it at other "
    "temperatures or sampling params, or other epochs) count as one judge, whose vote on an answer is the "
    "median of its samples' grades. The panel's grade of an answer is the median of the judges' votes. "
    "A median of an even count is the lower middle grade. So sampling a judge again, at any temperature, "
    "does not outvote another judge. An answer has a vote, and a panel grade, only when every sample and "
    "every judge graded it: a missing grade could have been any grade (with two judges, dropping one would "
    "score the answer with the other's grade alone), so such an answer is counted under the first "
    "grader's status that is not ok (unparseable, cut, failed), never scored."
)


class Differing(NamedTuple):
    """Among the `n` answers every grader graded, the `count` whose grades are not all equal; `share`, count
    over n, is Undefined when n is 0."""

    n: int
    count: int
    share: float | Undefined


def consensus_grade(grades: Sequence[float]) -> float:
    """The median of several grades of one item; of an even count, the lower of the two middle grades, which
    stays on the scale and is the conservative choice."""
    ordered = np.sort(np.asarray(grades, dtype=float))
    if len(ordered) == 0:
        raise ValueError("no grades to take the consensus of")
    return float(ordered[(len(ordered) - 1) // 2])


def consensus_grades(grades: np.ndarray) -> np.ndarray:
    """consensus_grade of each row over its graded entries; NaN for a row nobody graded. For raters who each
    grade a share of the items (human labels); a judge panel grades every answer: `panel_grades`."""
    return np.array(
        [consensus_grade(row[~np.isnan(row)]) if not np.isnan(row).all() else np.nan for row in grades]
    )


def panel_grades(grades: np.ndarray) -> np.ndarray:
    """consensus_grade of each row every grader graded; NaN for a row any grader left ungraded
    (CONSENSUS_RULE: a missing vote could have been any grade)."""
    return np.array([np.nan if np.isnan(row).any() else consensus_grade(row) for row in grades])


def first_status_not_ok(status: np.ndarray) -> np.ndarray:
    """(answers x graders) parse statuses -> per answer, the first grader's status that is not 'ok' ('ok'
    when every grader's is): what an answer without a panel grade is counted as."""
    not_ok = status != "ok"
    first = status[np.arange(len(status)), not_ok.argmax(axis=1)] if len(status) else status[:, 0]
    return np.where(not_ok.any(axis=1), first, "ok").astype(object)


def differing(grades: np.ndarray, item: str = "answer", graders: str = "graders") -> Differing:
    """How often the graders differ (judges of a panel, or the samples of one judge: its drift), over the
    rows every grader graded; with none, the share is undefined, the reason naming the `item` and `graders`
    ('no turn graded by both judges')."""
    complete = grades[~np.isnan(grades).any(axis=1)]
    count = int((complete != complete[:, :1]).any(axis=1).sum())
    if len(complete) == 0:
        every = "both" if grades.shape[1] == 2 else "all"
        return Differing(0, 0, Undefined(f"no {item} graded by {every} {graders}", 0))
    return Differing(len(complete), count, count / len(complete))


def exact_agreement(pair: Differing) -> float | Undefined:
    """The share of the answers two graders both graded on which they gave the same grade."""
    return pair.share if isinstance(pair.share, Undefined) else 1 - pair.share


class PanelJudge(NamedTuple):
    """One judge of a panel: its label, and the grader columns (one per sample) holding its grades."""

    label: str
    model: str
    samples: list[str]
    columns: list[int]
    runs: list[str]


class JudgeRun(NamedTuple):
    """Who graded a run, as a panel sees it: the judge (model and rubric: what has one vote) and the sample
    of it (sampling params and epoch), each as a key to compare and a label to show."""

    judge: str
    sample: str
    model: str
    name: str  # the judge's model and rubric, shown when two judges share a model
    sample_label: str  # 'temperature=0.7 epoch 1'
    run_id: str


def sample_label(params: dict[str, Any], epoch: int) -> str:
    """A sample of a judge as shown: its sampling params, then its epoch ('temperature=0.7 epoch 1')."""
    return " ".join([*(f"{key}={value}" for key, value in sorted(params.items())), f"epoch {epoch}"])


def group_graders(runs: Sequence[JudgeRun]) -> dict[tuple[str, str], list[int]]:
    """(judge, sample) of every grader -> the indices of its runs (a grader's answers may come from several
    runs, one model each): judges and a judge's samples in order of first appearance. A grader is a column
    of the panel's grades."""
    by_judge: dict[str, dict[str, list[int]]] = {}
    for index, run in enumerate(runs):
        by_judge.setdefault(run.judge, {}).setdefault(run.sample, []).append(index)
    return {
        (judge, sample): indices for judge, samples in by_judge.items() for sample, indices in samples.items()
    }


def panel_judges(graders: dict[tuple[str, str], list[int]], runs: Sequence[JudgeRun]) -> list[PanelJudge]:
    """The judges of `graders` (group_graders) with their samples; a judge is labelled by its model, or by
    its name (model and rubric) when two judges share a model."""
    judges: dict[str, PanelJudge] = {}
    for column, ((identity, _), indices) in enumerate(graders.items()):
        first = runs[indices[0]]
        judge = judges.setdefault(identity, PanelJudge(first.name, first.model, [], [], []))
        judge.samples.append(first.sample_label)
        judge.columns.append(column)
        judge.runs.extend(runs[i].run_id for i in indices)
    labels = [judge.model for judge in judges.values()]
    return [
        judge._replace(label=judge.model) if labels.count(judge.model) == 1 else judge
        for judge in judges.values()
    ]


def grader_labels(judges: Sequence[PanelJudge]) -> list[str]:
    """A name per grader column: its judge's label, with the sample when the judge has several."""
    labels = [""] * sum(len(judge.columns) for judge in judges)
    for judge in judges:
        for column, sample in zip(judge.columns, judge.samples, strict=True):
            labels[column] = judge.label if len(judge.columns) == 1 else f"{judge.label} {sample}"
    return labels


def judge_grades(grades: np.ndarray, judges: Sequence[PanelJudge]) -> np.ndarray:
    """(answers x graders) -> (answers x judges): each judge's vote is the consensus of its samples', so
    sampling a judge again does not outvote another judge; NaN where a sample gave no grade."""
    return np.column_stack([panel_grades(grades[:, judge.columns]) for judge in judges])


def judge_pairs(
    grades: np.ndarray, judges: Sequence[PanelJudge], item: str = "answer"
) -> list[tuple[str, str, Differing]]:
    """Every pair of judges (in panel order) with how often their votes differ over the `item`s both graded;
    `grades` is (answers x judges)."""
    return [
        (judges[a].label, judges[b].label, differing(grades[:, [a, b]], item, "judges"))
        for a, b in combinations(range(len(judges)), 2)
    ]


def drift(grades: np.ndarray, judge: PanelJudge, item: str = "answer") -> Differing | None:
    """How often a judge's samples differ (its self-consistency); None for a judge sampled once."""
    return differing(grades[:, judge.columns], item, "samples") if len(judge.columns) > 1 else None
