import json
from collections import Counter
from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.labels.sample import (
    allocate,
    build_sample,
    draw_items,
    item_id,
    judged_turns,
    read_run_judge,
    turn_group,
)
from tasks.core.preflight import UserError
from tasks.report.stats import seeded_rng
from tests.perf.bench_report import write_run
from tests.tasks.benchmarks.threadmed.labels.fixtures import (
    N_JUDGED,
    RUN_ID,
    model_answer,
    physician_answer,
    question,
)


def test_turn_groups_are_the_degradation_tables() -> None:
    assert [turn_group(t) for t in (0, 1, 2, 3, 5, 6, 20)] == ["T0", "T1", "T2", "T3-5", "T3-5", "T6+", "T6+"]


def test_a_small_stratum_gives_all_it_has_and_the_others_share_the_rest() -> None:
    rng = seeded_rng(0, "test")
    assert allocate({"rare": 1, "b": 10, "c": 10}, 9, rng) == {"rare": 1, "b": 4, "c": 4}
    assert allocate({"rare": 1, "small": 3, "big": 50}, 20, rng) == {"rare": 1, "small": 3, "big": 16}
    assert allocate({"a": 2, "b": 3, "empty": 0}, 99, rng) == {"a": 2, "b": 3, "empty": 0}


def test_the_leftover_of_an_uneven_share_goes_one_each_to_strata_drawn_by_the_seed() -> None:
    counts = allocate({"rare": 1, "b": 10, "c": 10}, 10, seeded_rng(0, "test"))
    assert counts["rare"] == 1 and sorted([counts["b"], counts["c"]]) == [4, 5]
    assert allocate(dict.fromkeys("abcde", 5), 3, seeded_rng(0, "test")) == allocate(
        dict.fromkeys("abcde", 5), 3, seeded_rng(0, "test")
    )
    assert sorted(allocate(dict.fromkeys("abcde", 5), 3, seeded_rng(0, "test")).values()) == [0, 0, 1, 1, 1]


def test_draws_are_seeded_balanced_and_shuffled() -> None:
    candidates = [{"item_id": f"c{i}", "stratum": "common"} for i in range(40)]
    candidates += [{"item_id": "r0", "stratum": "rare"}]
    drawn = draw_items(candidates, 6, seed=7)
    assert drawn == draw_items(candidates, 6, seed=7)
    assert [row["position"] for row in drawn] == list(range(6))
    assert Counter(row["stratum"] for row in drawn) == {"rare": 1, "common": 5}
    assert [row["item_id"] for row in drawn] != [row["item_id"] for row in draw_items(candidates, 6, seed=8)]


def test_item_ids_are_stable_and_opaque() -> None:
    assert item_id("r1", "alpha", "baseline", "t0", 2) == item_id("r1", "alpha", "baseline", "t0", 2)
    assert item_id("r1", "alpha", "baseline", "t0", 2) != item_id("r1", "beta", "baseline", "t0", 2)
    assert len(item_id("r1", "alpha", "baseline", "t0", 2)) == 16


def test_judged_turns_carry_their_thread_so_far(run_dir: Path) -> None:
    turns = judged_turns(run_dir)
    assert len(turns) == N_JUDGED  # beta's unparseable turn is not a candidate
    third = next(t for t in turns if (t["model"], t["thread_id"], t["turn"]) == ("alpha-model", "t0", 2))
    assert third == {
        "item_id": item_id(RUN_ID, "alpha-model", "baseline", "t0", 2),
        "run_id": RUN_ID,
        "model": "alpha-model",
        "condition": "baseline",
        "thread_id": "t0",
        "turn": 2,
        "turn_group": "T2",
        "judge_score": 1.0,
        "answer_words": len(model_answer("alpha-model", "t0", 2).split()),
        "stratum": "T2|alpha-model|1",
        "context": [{"question": question("t0", t), "answer": physician_answer("t0", t)} for t in (0, 1)],
        "question": question("t0", 2),
        "physician_answer": physician_answer("t0", 2),
        "answer": model_answer("alpha-model", "t0", 2),
    }


def test_a_sample_records_the_run_its_judge_and_its_strata(run_dir: Path) -> None:
    sample = build_sample(run_dir, 200, seed=1)
    info = {key: value for key, value in sample.info.items() if key != "written_at"}
    assert info == {
        "run_dir": str(run_dir.resolve()),
        "run_id": RUN_ID,
        "judge": {"model": "threadmed/overlap-judge", "rubric_version": "judge_rubric_v1", "epoch": 0},
        "seed": 1,
        "n": N_JUDGED,
        "requested_n": 200,
        "strata": dict(sorted(Counter(turn["stratum"] for turn in judged_turns(run_dir)).items())),
        "rubric_version": "judge_rubric_v1",
        "rubric_sha256": sample.rubric.sha256,
        "page": "rate.html",
    }
    assert [item["position"] for item in sample.items] == list(range(N_JUDGED))


def test_a_rubric_edited_since_the_run_is_refused(run_dir: Path, tmp_path: Path) -> None:
    rubric = tmp_path / "judge_rubric_v1.txt"
    rubric.write_text("version: judge_rubric_v1\n=== system ===\nedited\n=== user ===\n$question\n")
    edited = tmp_path / "run"
    edited.mkdir()
    manifest = (run_dir / "manifest.json").read_text().replace('"rubric": null', f'"rubric": "{rubric}"')
    (edited / "manifest.json").write_text(manifest)
    with pytest.raises(UserError) as error:
        read_run_judge(edited)
    assert str(error.value).startswith(
        f"the rubric {rubric} has changed since run {edited} was judged (sha256 "
    )
    assert str(error.value).endswith("): restore the file the run used")


def test_a_run_without_judged_turns_is_refused(run_dir: Path, tmp_path: Path) -> None:
    empty = write_run(tmp_path / "run", json.loads((run_dir / "manifest.json").read_text()), [], [])
    (empty / "responses.parquet").write_bytes((run_dir / "responses.parquet").read_bytes())
    with pytest.raises(UserError) as error:
        build_sample(empty, 10, seed=0)
    assert str(error.value) == f"run {empty} has no judged turns (judge parse_status ok): nothing to rate"
