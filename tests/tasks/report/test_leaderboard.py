"""The leaderboard on hand-made run manifests: rows measured alike share a table, others never do."""

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tasks.core.preflight import UserError
from tasks.evals.config import RunConfig
from tasks.report.coverage import RunCoverage
from tasks.report.leaderboard import (
    PROVENANCE,
    StoredRun,
    board_table,
    graders,
    leaderboards,
    read_stored_run,
    run_provenance,
    setup_title,
    status_text,
    write_leaderboard,
)

RUBRIC, REASK = "1" * 64, "2" * 64
COMMON = RunConfig.model_fields  # what the command passes: settings every benchmark's run has
COMMIT = "c" * 40


def manifest(run_id: str, scores: dict[str, dict[str, float | None]], **changes: Any) -> dict[str, Any]:
    """A ThReadMed run's manifest as run_manifest writes it today; `scores`: model -> condition -> score."""
    judge = {"name": "gpt-4o", "model": "openai/gpt-4o", "epoch": 0, "rubric": None}
    written = {
        "run_id": run_id,
        "written_at": "2026-11-20T10:00:00+00:00",
        "dataset": {"dir": "/data/build", "fingerprint": "f" * 64},
        "config": {
            "models": [{"name": model, "model": f"openai/{model}"} for model in scores],
            "judge": judge,
            "sample": {"split": "test", "quotas": None, "seed": 0, "limit": None},
            "conditions": ["baseline", "oracle"],
            "truncated": "judge",
            "max_workers": None,
        },
        "config_sha256": "e" * 64,
        "sent": {
            "models": {model: {"model": f"openai/{model}", "params": {}} for model in scores},
            "judge": {"gpt-4o": {"model": "openai/gpt-4o", "api_base": None, "params": {"temperature": 0}}},
        },
        "prompts": {"judge_rubric_v1": {"sha256": RUBRIC}, "judge_reask_v1": {"sha256": REASK}},
        "judge_rubric": {"version": "judge_rubric_v1", "sha256": RUBRIC},
        "project": {"name": "threadmed-qa", "version": "0.1.0"},
        "git": {"commit": COMMIT, "dirty": False},
        "summary": {
            "run_id": run_id,
            "groups": [
                {"model": model, "group": condition, "counts": {}, "score": score, "cost_usd": 0.25}
                for model, by_condition in scores.items()
                for condition, score in by_condition.items()
            ],
            "failed_calls": {},
            "failed_jobs": [],
            "group_label": "condition",
            "score_label": "mean",
            "score_note": "mean score 0-100 over judged turns",
        },
    }
    for path, value in changes.items():  # "config.judge.epoch" = 1 sets manifest["config"]["judge"]["epoch"]
        *parents, leaf = path.split(".")
        target = written
        for key in parents:
            target = target[key]
        target[leaf] = value
    return written


# What a run's rows lack, as tasks/benchmarks/compare.py run_coverage reads it: here, nothing.
ROWS_HOLD_EVERY_ITEM = RunCoverage({})


def rows_hold_every_item(run_dir: Path, manifest: dict[str, Any]) -> RunCoverage:
    return ROWS_HOLD_EVERY_ITEM


def run(run_id: str, scores: dict[str, dict[str, float | None]], **changes: Any) -> StoredRun:
    return StoredRun(
        Path(f"/runs/{run_id}"), "threadmed", manifest(run_id, scores, **changes), ROWS_HOLD_EVERY_ITEM
    )


def table_of(boards, model: str) -> int:
    return next(i for i, board in enumerate(boards) if any(row.model == model for row in board.rows))


def test_runs_measured_alike_share_one_table_ranked_by_their_first_score():
    boards = leaderboards(
        [
            run("r1", {"a": {"baseline": 40.0, "oracle": 50.0}}),
            run("r2", {"b": {"baseline": 60.0}, "c": {"baseline": None}}),
        ],
        COMMON,
    )
    [board] = boards
    assert [(row.model, row.scores, row.cost_usd) for row in board.rows] == [
        ("b", {"mean · condition baseline": 60.0}, 0.25),
        ("a", {"mean · condition baseline": 40.0, "mean · condition oracle": 50.0}, 0.5),
        ("c", {"mean · condition baseline": None}, 0.25),
    ]
    assert board.score_columns == ["mean · condition baseline", "mean · condition oracle"]
    assert setup_title(board.setup) == (
        'threadmed · dataset ffffffffffff… · test split, seed 0 · judge openai/gpt-4o {"temperature": 0} '
        'epoch 0 · prompts judge_reask_v1 222222222222…, judge_rubric_v1 111111111111… · truncated "judge"'
    )


@pytest.mark.parametrize(
    "difference",
    [
        {"dataset.fingerprint": "0" * 64},
        {"config.sample": {"split": "test", "quotas": None, "seed": 0, "limit": 5}},
        {
            "sent.judge": {
                "claude": {"model": "anthropic/claude", "api_base": None, "params": {"temperature": 0}}
            }
        },
        {
            "sent.judge": {
                "gpt-4o": {"model": "openai/gpt-4o", "api_base": None, "params": {"temperature": 1}}
            }
        },
        {"config.judge.epoch": 1},
        {"prompts.judge_rubric_v1": {"sha256": "3" * 64}},
        {"config.truncated": "mark"},
    ],
    ids=["dataset", "sample", "judge model", "judge params", "judge epoch", "rubric", "benchmark setting"],
)
def test_runs_that_differ_in_what_a_score_means_are_never_mixed(difference):
    boards = leaderboards(
        [run("r1", {"a": {"baseline": 40.0}}), run("r2", {"b": {"baseline": 60.0}}, **difference)], COMMON
    )
    assert [[row.model for row in board.rows] for board in boards] == [["a"], ["b"]]
    assert setup_title(boards[0].setup) != setup_title(boards[1].setup)


def test_what_only_changes_columns_or_calls_keeps_one_table():
    """Another set of conditions fills other columns; concurrency and the models' own settings are not
    how a score is measured."""
    boards = leaderboards(
        [
            run("r1", {"a": {"baseline": 40.0}}, **{"config.conditions": ["baseline"]}),
            run("r2", {"b": {"oracle": 60.0}}, **{"config.conditions": ["oracle"], "config.max_workers": 8}),
        ],
        COMMON,
    )
    assert [[row.model for row in board.rows] for board in boards] == [["a", "b"]]


def test_a_judge_sent_temperature_0_0_is_the_judge_of_another_run_sent_0():
    """The same calls (one call key): one table, the params shown as the call key reads them."""
    as_float = {"gpt-4o": {"model": "openai/gpt-4o", "api_base": None, "params": {"temperature": 0.0}}}
    boards = leaderboards(
        [
            run("r1", {"a": {"baseline": 40.0}}),
            run("r2", {"b": {"baseline": 60.0}}, **{"sent.judge": as_float}),
        ],
        COMMON,
    )
    assert [[row.model for row in board.rows] for board in boards] == [["b", "a"]]
    assert '{"temperature": 0}' in setup_title(boards[0].setup)


def test_other_benchmarks_get_their_own_tables_even_on_equal_manifests():
    threadmed, other = run("r1", {"a": {"baseline": 40.0}}), run("r2", {"a": {"baseline": 40.0}})
    boards = leaderboards([threadmed, other._replace(benchmark="consult")], COMMON)
    assert [board.benchmark for board in boards] == ["threadmed", "consult"]


def test_a_run_missing_its_fingerprint_or_prompts_is_ranked_with_no_other():
    old = [run(f"r{i}", {f"m{i}": {"baseline": 50.0}}, **{"dataset.fingerprint": None}) for i in (1, 2)]
    assert len(leaderboards(old, COMMON)) == 2
    without_prompts = [run(f"r{i}", {f"m{i}": {"baseline": 50.0}}) for i in (1, 2)]
    for stored in without_prompts:
        del stored.manifest["prompts"]
    assert len(leaderboards(without_prompts, COMMON)) == 2


def test_each_row_carries_its_provenance_in_full():
    stored = run("r1", {"a": {"baseline": 40.0}}, **{"git.dirty": True, "rejudge": {"source_run_id": "r0"}})
    # what the score is over, beside it: 1 judged turn of 4
    stored.manifest["summary"]["groups"][0]["counts"] = {"answer ok": 4, "judged": 1, "no grade": 3}
    assert run_provenance(stored, "a") == {
        "status": "complete",
        "counts": "baseline: answer ok 4, judged 1, no grade 3",
        "run": "r1 (re-judges run r0)",
        "date": "2026-11-20T10:00:00+00:00",
        "project version": "0.1.0",
        "commit": f"{COMMIT} (with uncommitted changes)",
        "config sha256": "e" * 64,
        "prompts": f"judge_reask_v1 {REASK}; judge_rubric_v1 {RUBRIC}",
        "dataset fingerprint": "f" * 64,
        "judge": f'judge openai/gpt-4o {{"temperature": 0}} rubric judge_rubric_v1 (sha256 {RUBRIC}) epoch 0',
    }


def test_what_an_older_run_did_not_record_is_unknown_not_guessed():
    stored = run("r1", {"a": {"baseline": 40.0}}, **{"summary.failed_calls": {"timeout": 2}})
    for field in ("project", "config_sha256", "judge_rubric", "git"):
        del stored.manifest[field]
    provenance = run_provenance(stored, "a")
    assert provenance["status"] == "incomplete: 2 failed calls, 0 failed jobs"
    assert provenance["project version"] == "unknown (run written before project versions were recorded)"
    assert provenance["config sha256"] == "unknown (run written before config hashes were recorded)"
    assert provenance["commit"] == "unknown (run written before commits were recorded)"
    assert provenance["judge"] == (
        'judge openai/gpt-4o {"temperature": 0} rubric unknown (run written before rubric versions were '
        "recorded) epoch 0"
    )


def test_a_benchmark_without_a_judge_names_its_other_roles():
    stored = run("r1", {"a": {"0": 30.0}})
    stored.manifest["sent"] = {"models": {}, "patient": {"p": {"model": "openai/mini", "params": {}}}}
    stored.manifest["judge_rubric"] = None
    del stored.manifest["config"]["judge"]
    assert run_provenance(stored, "a")["judge"] == "patient openai/mini {}"


def by_epoch_run(run_id: str, scores: dict[str, list[float | None]], overall: dict | None) -> StoredRun:
    """A SNOMED run as summarize_by_epoch records it: `scores` model -> each epoch's F1; `overall` the
    pooled F1 per model (None: a manifest written before the summary recorded it)."""
    stored = run(run_id, {model: dict(enumerate(epochs)) for model, epochs in scores.items()})
    summary = stored.manifest["summary"]
    summary.update(group_label="epoch", score_label="F1", score_note="mean F1 0-100")
    for group in summary["groups"]:
        group["group"] = str(group["group"])
    if overall is not None:
        summary["overall"] = overall
    return stored._replace(benchmark="snomed")


def test_runs_of_several_epochs_rank_by_the_score_pooled_over_every_epoch_as_the_report_pools_it():
    # a's first epoch is its best: ranked by epoch 0 it led b, whose pooled F1 (the report's) is higher.
    [board] = leaderboards(
        [by_epoch_run("r1", {"a": [80.0, 20.0], "b": [60.0, 62.0]}, {"a": 50.0, "b": 61.0})], COMMON
    )
    assert [(row.model, row.scores) for row in board.rows] == [
        ("b", {"F1 · all epochs": 61.0, "F1 · epoch 0": 60.0, "F1 · epoch 1": 62.0}),
        ("a", {"F1 · all epochs": 50.0, "F1 · epoch 0": 80.0, "F1 · epoch 1": 20.0}),
    ]
    table = board_table(board, "leaderboard-snomed-1.csv")
    assert (table.columns[:4], table.caption.split(". ")[1]) == (
        ["model", "F1 · all epochs", "F1 · epoch 0", "F1 · epoch 1"],
        "Ranked by F1 · all epochs: the rows of every epoch pooled, as the report scores them (— also for a "
        "run of several epochs written before its summary pooled them)",
    )


def test_a_by_epoch_run_written_before_summaries_pooled_epochs_is_unknown_over_several_epochs():
    [board] = leaderboards(
        [
            by_epoch_run("old", {"a": [90.0, 10.0], "b": [40.0]}, None),
            by_epoch_run("new", {"c": [45.0]}, {"c": 45.0}),
        ],
        COMMON,
    )
    assert [(row.model, row.scores["F1 · all epochs"]) for row in board.rows] == [
        ("c", 45.0),
        ("b", 40.0),  # one epoch: its pooled score is that epoch's
        ("a", None),  # two epochs, not pooled when it was written: unknown, never its first epoch's
    ]


def write_run(root: Path, written: dict[str, Any], benchmark: str = "threadmed") -> Path:
    folder = root / written["run_id"]
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(written))
    (folder / "benchmark.json").write_text(json.dumps({"benchmark": benchmark}))
    return folder


def test_the_files_hold_one_table_each_and_a_new_leaderboard_replaces_the_old(tmp_path):
    first = write_run(tmp_path, manifest("r1", {"a": {"baseline": 40.0}}))
    second = write_run(tmp_path, manifest("r2", {"b": {"baseline": 60.123}}, **{"config.judge.epoch": 1}))
    out = tmp_path / "board"
    write_leaderboard([first, second], out, rows_hold_every_item, COMMON)
    assert sorted(path.name for path in out.iterdir()) == [
        "leaderboard-threadmed-1.csv",
        "leaderboard-threadmed-2.csv",
        "leaderboard.html",
        "leaderboard.md",
    ]
    with (out / "leaderboard-threadmed-2.csv").open() as file:
        [row] = list(csv.DictReader(file))
    assert (row["model"], row["mean · condition baseline"], row["cost_usd"], row["commit"]) == (
        "b",
        "60.123",
        "0.25",
        COMMIT,
    )
    assert list(row) == ["model", "mean · condition baseline", "cost_usd", *PROVENANCE, "setup"]
    assert json.loads(row["setup"])["graders"]["judge"]["epoch"] == 1
    markdown = (out / "leaderboard.md").read_text()
    assert (
        markdown.count("\n### threadmed · ") == 2
        and "| b | 60.1 | 0.2500 | complete |  | r2 | 2026-11-20 10:00 UTC | 0.1.0 | cccccccccccc… |"
        in markdown
    )
    assert "epoch 1" in (out / "leaderboard.html").read_text()

    write_leaderboard([first], out, rows_hold_every_item, COMMON)
    assert sorted(path.name for path in out.iterdir()) == [
        "leaderboard-threadmed-1.csv",
        "leaderboard.html",
        "leaderboard.md",
    ]


def test_folders_that_are_not_finished_runs_or_an_out_of_other_files_are_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"empty is not a finished evaluation run \(no manifest.json\)"):
        read_stored_run(tmp_path / "empty")
    old = manifest("r0", {"a": {"baseline": 1.0}})
    del old["summary"]
    with pytest.raises(UserError, match="holds no run summary"):
        read_stored_run(write_run(tmp_path, old))
    first = write_run(tmp_path, manifest("r1", {"a": {"baseline": 40.0}}))
    with pytest.raises(UserError, match="the same run is given more than once"):
        write_leaderboard([first, first], tmp_path / "board", rows_hold_every_item, COMMON)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(UserError, match="holds files other than") as refused:
        write_leaderboard([first], tmp_path / "mine", rows_hold_every_item, COMMON)
    assert refused.value.option == "--out" and (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_a_manifest_is_not_changed_by_reading_it():
    stored = run("r1", {"a": {"baseline": 40.0}})
    before = copy.deepcopy(stored.manifest)
    leaderboards([stored], COMMON)
    assert stored.manifest == before


def test_a_run_written_before_what_was_sent_was_recorded_is_graded_by_its_configured_roles():
    stored = run("r1", {"a": {"baseline": 40.0}})
    del stored.manifest["sent"]
    stored.manifest["config"]["judge"]["params"] = {"temperature": 0.5}
    assert graders(stored.manifest) == {
        "judge": {"model": "openai/gpt-4o", "params": {"temperature": 0.5}, "epoch": 0}
    }


def test_a_row_is_complete_only_when_its_rows_hold_every_planned_item_and_nothing_failed():
    stored = run("r1", {"a": {"baseline": 40.0}, "b": {"baseline": 50.0}})
    gap = "condition baseline: 0 of 3 threads in responses.parquet"
    lacking = stored._replace(coverage=RunCoverage({"a": [gap]}))
    failed = lacking._replace(manifest={**lacking.manifest, "summary": {**lacking.manifest["summary"]}})
    failed.manifest["summary"]["failed_calls"] = {"timeout": 2}
    unread = stored._replace(coverage=RunCoverage({}, "its manifest records no planned thread count"))
    assert [
        (status_text(case, "a"), status_text(case, "b")) for case in (stored, lacking, failed, unread)
    ] == [
        ("complete", "complete"),
        (f"incomplete: its rows lack planned items ({gap})", "complete"),
        (
            f"incomplete: its rows lack planned items ({gap}), 2 failed calls, 0 failed jobs",
            "incomplete: 2 failed calls, 0 failed jobs",
        ),
        (
            "unverified: its manifest records no planned thread count",
            "unverified: its manifest records no planned thread count",
        ),
    ]
    assert StoredRun(Path("/r"), "threadmed", stored.manifest).coverage.unverified == "its rows were not read"


def test_formulas_and_markup_in_names_are_inert_in_every_file(tmp_path):
    """A model named by a formula and one named by an image tag: the CSV cells start with a quote, the
    Markdown and the page show the tag as text."""
    formula, image = '=HYPERLINK("http://example.com","x")', "<img src=x onerror=alert(1)>"
    written = manifest("r1", {formula: {"baseline": 40.0}, image: {"baseline": -0.5}})
    out = tmp_path / "board"
    write_leaderboard([write_run(tmp_path, written)], out, rows_hold_every_item, COMMON)
    with (out / "leaderboard-threadmed-1.csv").open(newline="") as file:
        rows = list(csv.reader(file))
    assert [row[:3] for row in rows[1:]] == [["'" + formula, "40.0", "0.25"], [image, "-0.5", "0.25"]]
    markdown = (out / "leaderboard.md").read_text()
    assert "| &lt;img src=x onerror=alert(1)&gt; | -0.5 |" in markdown and "<img" not in markdown
    page = (out / "leaderboard.html").read_text()
    assert "<td>&lt;img src=x onerror=alert(1)&gt;</td>" in page and "<img" not in page
