"""The inputs of a judge agreement measure: a labels folder's items and raters' grades (Labels) and each
run's judge, its grades of the sampled items and the answers it graded (Judge); a run that graded other
answers than the sampled run's is refused.
"""

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.threadmed.contracts import JUDGMENTS, LABEL_ITEMS, RATINGS, RESPONSES
from tasks.benchmarks.threadmed.run_data import check_run_folder
from tasks.core.preflight import UserError
from tasks.data.contracts import Contract
from tasks.report.runs import read_rows, read_run_id

ITEM_KEY = ("model", "condition", "thread_id", "turn")
SIMULATED = "simulated"


class Labels(NamedTuple):
    """The sampled items (columns as arrays, one entry per item), raters' grades (raters x items, NaN where a
    rater gave none) and sample.json."""

    items: dict[str, np.ndarray]
    raters: list[str]
    rater_kinds: list[str]
    grades: np.ndarray
    sample: dict[str, Any]

    @property
    def keys(self) -> list[tuple]:
        return list(zip(*(self.items[name].tolist() for name in ITEM_KEY), strict=True))

    def rater_label(self, index: int) -> str:
        return rater_label(self.raters[index], self.rater_kinds[index])


class Judge(NamedTuple):
    """One run's judge: its identity, its grades of the items (NaN: unscored) and of every answer it graded
    (item key -> (response call_key, score)), which drift compares across epochs."""

    label: str
    identity: dict[str, Any]
    run_id: str
    run_dir: str
    grades: np.ndarray
    graded: dict[tuple, tuple[str | None, float]]


def rater_label(rater: str, kind: str) -> str:
    return f"{rater} (simulated)" if kind == SIMULATED else rater


def load_labels(labels_dir: Path) -> Labels:
    """A labels folder's items, ratings and sample; UserError when it is not one, holds no ratings, or names a
    rater of two kinds."""
    for name, fix in (
        ("sample.json", "run `threadmed labels sample RUN_DIR --out DIR` first"),
        ("items.parquet", "run `threadmed labels sample RUN_DIR --out DIR` first"),
        ("ratings.parquet", f"run `threadmed labels import {labels_dir} CSV...` first"),
    ):
        if not (labels_dir / name).is_file():
            raise UserError(f"{labels_dir} has no {name}: {fix}", "--labels")
    items = read_rows(labels_dir / "items.parquet", LABEL_ITEMS)
    items.sort(key=lambda item: item["position"])
    ratings = read_rows(labels_dir / "ratings.parquet", RATINGS)
    raters = sorted({row["rater"] for row in ratings})
    kinds = {row["rater"]: row["rater_kind"] for row in ratings}
    mixed = sorted({row["rater"] for row in ratings if row["rater_kind"] != kinds[row["rater"]]})
    if mixed:  # the last kind would label the rater: a simulated rater reported as a clinician
        raise UserError(
            f"{labels_dir / 'ratings.parquet'} names rater {mixed[0]!r} both simulated and clinician: a "
            f"rater is one kind; import its ratings again with `threadmed labels import {labels_dir} CSV... "
            "--replace`",
            "--labels",
        )
    index = {item["item_id"]: i for i, item in enumerate(items)}
    unknown = next((row["item_id"] for row in ratings if row["item_id"] not in index), None)
    if unknown is not None:
        raise UserError(
            f"{labels_dir / 'ratings.parquet'} rates item {unknown}, which items.parquet does not hold: "
            f"import the ratings again with `threadmed labels import {labels_dir} CSV... --replace`",
            "--labels",
        )
    grades = np.full((len(raters), len(items)), np.nan)
    for row in ratings:
        grades[raters.index(row["rater"]), index[row["item_id"]]] = row["grade"]
    return Labels(
        items={name: np.array([item[name] for item in items]) for name in LABEL_ITEMS.columns},
        raters=raters,
        rater_kinds=[kinds[rater] for rater in raters],
        grades=grades,
        sample=json.loads((labels_dir / "sample.json").read_text()),
    )


def read_rows_of(run_dir: Path, contract: Contract) -> list[dict[str, Any]]:
    return read_rows(run_dir / f"{contract.name}.parquet", contract)


def _answers(run_dir: Path) -> dict[tuple, str | None]:
    """Item key -> the response's call_key, for every answer of the run."""
    return {tuple(row[k] for k in ITEM_KEY): row["call_key"] for row in read_rows_of(run_dir, RESPONSES)}


def _identity(run_dir: Path, judgments: list[dict[str, Any]]) -> dict[str, Any]:
    """model, rubric version(s) graded with, params as sent and epoch (absent: 0) of a run's judge."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    judge = manifest.get("config", {}).get("judge") or manifest.get("judge") or {}
    sent = next(iter(manifest.get("sent", {}).get("judge", {}).values()), judge)
    versions = sorted({row["rubric_version"] for row in judgments if row["rubric_version"]})
    return {
        "model": judge.get("model"),
        "rubric_version": ", ".join(versions) or str(judge.get("rubric") or "rubric not recorded"),
        "params": sent.get("params") or {},
        "epoch": int(judge.get("epoch") or 0),
    }


def judge_label(identity: dict[str, Any]) -> str:
    """'model (rubric, temperature=0, epoch 1)': what makes a run's grades what they are."""
    parts = [identity["rubric_version"], *(f"{k}={v}" for k, v in sorted(identity["params"].items()))]
    return f"{identity['model']} ({', '.join(parts)}, epoch {identity['epoch']})"


def judge_name(identity: dict[str, Any]) -> str:
    """'model (rubric)': one judge, whose runs at other params or epochs are its samples (as in a panel)."""
    return f"{identity['model']} ({identity['rubric_version']})"


def sample_name(identity: dict[str, Any]) -> str:
    """'temperature=0.7 epoch 1': which sample of its judge a run is."""
    return " ".join(
        [*(f"{k}={v}" for k, v in sorted(identity["params"].items())), f"epoch {identity['epoch']}"]
    )


def sampled_answers(labels: Labels, run_dirs: list[Path]) -> dict[tuple, str | None]:
    """The sampled run's answers: from the RUN_DIR of the sample's run id, else sample.json's run folder."""
    run_id = labels.sample["run_id"]
    for run_dir in run_dirs:
        if read_run_id(run_dir) == run_id:
            return _answers(run_dir)
    recorded = Path(labels.sample["run_dir"])
    if (recorded / "responses.parquet").is_file():
        return _answers(recorded)
    raise UserError(
        f"the sampled run {run_id} is not among the run folders and {recorded} is gone: pass its folder",
        "RUN_DIRS...",
    )


def check_sampled_answers(
    run_dir: Path, answers: dict[tuple, str | None], reference: dict[tuple, str | None], labels: Labels
) -> None:
    """Raise UserError unless the run holds the sampled run's answer to every sampled item."""
    for item_id, key in zip(labels.items["item_id"].tolist(), labels.keys, strict=True):
        if key not in answers or answers[key] != reference.get(key):
            what = "has no answer to" if key not in answers else "holds another answer to"
            model, condition, thread_id, turn = key
            raise UserError(
                f"{run_dir} {what} sampled item {item_id} ({model}, {condition}, {thread_id}, turn {turn}) "
                f"than the sampled run {labels.sample['run_id']}: pass that run or runs re-judged from it",
                "RUN_DIRS...",
            )


def load_judges(labels: Labels, run_dirs: list[Path]) -> list[Judge]:
    """Each run folder's judge, with its grades of the sampled items; UserError for a run of other answers."""
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    reference = sampled_answers(labels, run_dirs)
    judges = []
    for run_dir in run_dirs:
        answers = _answers(run_dir)
        check_sampled_answers(run_dir, answers, reference, labels)
        judgments = read_rows_of(run_dir, JUDGMENTS)
        graded = {
            key: (answers.get(key), row["score"])
            for row in judgments
            if row["parse_status"] == "ok" and row["score"] is not None
            for key in [tuple(row[k] for k in ITEM_KEY)]
        }
        identity = _identity(run_dir, judgments)
        grades = np.array([graded[key][1] if key in graded else np.nan for key in labels.keys])
        judges.append(
            Judge(judge_label(identity), identity, read_run_id(run_dir), str(run_dir), grades, graded)
        )
    labels_seen = [judge.label for judge in judges]
    return [
        judge._replace(label=f"{judge.label} [run {judge.run_id}]")
        if labels_seen.count(judge.label) > 1
        else judge
        for judge in judges
    ]
