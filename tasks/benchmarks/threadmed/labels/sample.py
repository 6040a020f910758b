"""Draw the turns of a rating round: a seeded sample of one run's judged turns, balanced over strata.

A stratum is (turn group, model, judge grade), named "<turn group>|<model>|<grade>" (turn groups are
metrics.TURN_GROUPS). Allocation: every stratum is offered an equal share of n; a stratum smaller than its
share gives all it has, and what it leaves is shared equally among the others, until every stratum is
either exhausted or given its share. When n does not divide evenly, the leftover items go one each to
strata drawn by the seed. So rare grades and late turns appear as often as common ones allow, and the
sample is not the run's grade distribution: agreement statistics weigh items, not the run.

Every random choice comes from tasks/report/stats.py's seeded_rng, one named stream per step and per
stratum: the same run and seed give the same items in the same page order.
"""

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.threadmed.labels.folder import PAGE_FILE, grade_text, utc_text
from tasks.benchmarks.threadmed.metrics import TURN_GROUPS
from tasks.benchmarks.threadmed.run_data import load_runs, read_manifest
from tasks.benchmarks.threadmed.scorer import DEFAULT_RUBRIC
from tasks.core.preflight import UserError
from tasks.llm.prompts import PromptTemplate, load_prompt
from tasks.report.stats import seeded_rng

STREAM = "labels"  # the first label of this module's random streams


class RunJudge(NamedTuple):
    """The judge whose grades a sample is stratified by, and the rubric it was given (checked)."""

    model: str
    epoch: int
    rubric: PromptTemplate


class LabelSample(NamedTuple):
    """A drawn sample: sample.json's content, one row per item in page order (LABEL_ITEMS' columns plus
    the texts the page shows) and the rubric the run's judge was given."""

    info: dict[str, Any]
    items: list[dict[str, Any]]
    rubric: PromptTemplate


def turn_group(turn: int) -> str:
    """The name of the metrics.TURN_GROUPS group holding 0-based `turn`."""
    return next(name for name, first, last in TURN_GROUPS if first <= turn and (last is None or turn <= last))


def item_id(run_id: str, model: str, condition: str, thread_id: str, turn: int) -> str:
    """An opaque, stable id of one judged turn: the page shows it, and it reveals neither model nor grade."""
    key = "\x1f".join((run_id, model, condition, thread_id, str(turn)))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def allocate(sizes: Mapping[str, int], n: int, rng: np.random.Generator) -> dict[str, int]:
    """How many items each stratum gives to a sample of `n` (see the module docstring); all of them when
    n covers every stratum."""
    counts = dict.fromkeys(sizes, 0)
    open_strata = sorted(name for name, size in sizes.items() if size > 0)
    left = min(n, sum(sizes.values()))
    while left and open_strata:
        share = left // len(open_strata)
        small = [name for name in open_strata if sizes[name] - counts[name] <= share]
        if not small:
            break
        for name in small:
            left -= sizes[name] - counts[name]
            counts[name] = sizes[name]
        open_strata = [name for name in open_strata if name not in small]
    if left and open_strata:
        share, extra = divmod(left, len(open_strata))
        lucky = set(rng.permutation(open_strata)[:extra].tolist())
        for name in open_strata:
            counts[name] += share + (name in lucky)
    return counts


def draw_items(candidates: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """A stratified sample of `candidates` (rows with a `stratum`), each with its `position` on the page,
    in page order."""
    by_stratum: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in candidates:
        by_stratum[row["stratum"]].append(row)
    counts = allocate({name: len(rows) for name, rows in by_stratum.items()}, n, seeded_rng(seed, STREAM))
    drawn = []
    for name in sorted(by_stratum):
        rows = by_stratum[name]
        picked = seeded_rng(seed, STREAM, name).choice(len(rows), size=counts[name], replace=False)
        drawn.extend(rows[i] for i in sorted(picked))
    order = seeded_rng(seed, STREAM, "page order").permutation(len(drawn))
    return [{**drawn[index], "position": position} for position, index in enumerate(order)]


def read_run_judge(run_dir: Path) -> RunJudge:
    """The run's judge from its manifest, with the rubric file it used; UserError if that file is gone or
    no longer the one the run hashed."""
    raw = json.loads((run_dir / "manifest.json").read_text())
    judge = raw.get("judge") or raw["config"]["judge"]
    path = Path(judge.get("rubric") or DEFAULT_RUBRIC)
    if not path.is_file():
        raise UserError(f"the rubric of run {run_dir} ({path}) is missing: restore it to sample this run")
    rubric = load_prompt(path)
    recorded = raw.get("prompts", {}).get(rubric.version, {}).get("sha256", rubric.sha256)
    if recorded != rubric.sha256:
        raise UserError(
            f"the rubric {path} has changed since run {run_dir} was judged (sha256 {rubric.sha256[:12]}, the "
            f"run recorded {recorded[:12]}): restore the file the run used"
        )
    return RunJudge(model=judge["model"], epoch=int(judge.get("epoch") or 0), rubric=rubric)


def judged_turns(run_dir: Path) -> list[dict[str, Any]]:
    """Every turn of the run its judge graded (parse_status ok), with its texts and its thread so far."""
    run_id = read_manifest(run_dir).run_id
    turns = load_runs([run_dir]).turns
    asked = {
        (thread_id, int(turn)): {"question": question, "answer": answer}
        for thread_id, turn, question, answer in zip(
            turns.thread_id, turns.turn, turns.question, turns.physician_answer, strict=True
        )
    }
    rows = []
    for i in np.flatnonzero(turns.status == "ok"):
        model, thread_id, turn = str(turns.model[i]), str(turns.thread_id[i]), int(turns.turn[i])
        group, score = turn_group(turn), float(turns.score[i])
        rows.append(
            {
                "item_id": item_id(run_id, model, str(turns.condition[i]), thread_id, turn),
                "run_id": run_id,
                "model": model,
                "condition": str(turns.condition[i]),
                "thread_id": thread_id,
                "turn": turn,
                "turn_group": group,
                "judge_score": score,
                "answer_words": int(turns.words[i]),
                "stratum": f"{group}|{model}|{grade_text(score)}",
                "context": [asked[thread_id, t] for t in range(turn) if (thread_id, t) in asked],
                "question": turns.question[i],
                "physician_answer": turns.physician_answer[i],
                "answer": turns.response[i],
            }
        )
    return rows


def build_sample(run_dir: Path, n: int, seed: int) -> LabelSample:
    """Draw `n` judged turns of the run at `run_dir` (all of them when it has fewer)."""
    judge = read_run_judge(run_dir)
    candidates = judged_turns(run_dir)
    if not candidates:
        raise UserError(f"run {run_dir} has no judged turns (judge parse_status ok): nothing to rate")
    items = draw_items(candidates, n, seed)
    info = {
        "run_dir": str(run_dir.resolve()),
        "run_id": items[0]["run_id"],
        "judge": {"model": judge.model, "rubric_version": judge.rubric.version, "epoch": judge.epoch},
        "seed": seed,
        "n": len(items),
        "requested_n": n,
        "strata": dict(sorted(Counter(item["stratum"] for item in items).items())),
        "rubric_version": judge.rubric.version,
        "rubric_sha256": judge.rubric.sha256,
        "written_at": utc_text(datetime.now(UTC)),
        "page": PAGE_FILE,
    }
    return LabelSample(info, items, judge.rubric)
