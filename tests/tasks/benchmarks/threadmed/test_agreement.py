"""Judge agreement on a hand-written labels folder and hand-written runs: every number worked out by hand
from agreement_fixtures.ITEMS (or, for alpha and Spearman's r, from the libraries on the same columns)."""

import csv
import json
from pathlib import Path
from typing import Any

import krippendorff
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from tasks.benchmarks.threadmed.agreement import check_agreement_inputs, write_agreement
from tasks.benchmarks.threadmed.agreement_inputs import load_judges, load_labels
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.benchmarks.threadmed.agreement_stats import POSITION_NOTE, STATISTICS, compute_agreement
from tasks.benchmarks.threadmed.agreement_tables import build_tables, summary_table
from tasks.benchmarks.threadmed.contracts import RATINGS
from tasks.core.preflight import UserError
from tasks.core.safe_text import read_csv_rows
from tests.tasks.benchmarks.threadmed.agreement_fixtures import (
    ITEMS,
    JUDGE,
    judge_grades,
    write_judged_run,
    write_labels,
)

SETTINGS = AgreementSettings(n_resamples=200)
CONSENSUS = [1.0, 0.5, 0.0, 0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
JUDGE_LABEL = "openai/gpt-4o (judge_rubric_v1, temperature=0.7, epoch 0)"
# The same judge run again at epoch 1 changes its grade of the 2nd (1 -> 0.5) and 7th (0.5 -> 1) answers.
EPOCH_1 = [0.5 if i == 1 else 1.0 if i == 6 else grade for i, grade in enumerate(judge_grades())]


def agreement_of(root: Path, raters: dict[str, str] | None = None, rejudged: bool = True) -> dict[str, Any]:
    labels = load_labels(write_labels(root / "labels", raters))
    runs = [write_judged_run(root / "r1", "r1", judge_grades())]
    if rejudged:
        runs.append(write_judged_run(root / "r2", "r2", EPOCH_1, judge={**JUDGE, "epoch": 1}))
    return compute_agreement(labels, load_judges(labels, runs), SETTINGS)


@pytest.fixture(scope="module")
def agreement(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return agreement_of(tmp_path_factory.mktemp("agreement"))


def rows(agreement: dict[str, Any], table: str, **match: Any) -> list[dict[str, Any]]:
    return [row for row in agreement["tables"][table] if all(row[k] == v for k, v in match.items())]


def test_judge_against_each_rater_and_the_consensus(agreement):
    table = rows(agreement, "judge_vs_raters", judge=JUDGE_LABEL)
    assert [(r["versus"], r["versus_kind"], r["n"], r["exact"]) for r in table] == [
        ("ann", "clinician", 10, pytest.approx(0.7)),
        ("bob", "clinician", 9, pytest.approx(7 / 9)),  # bob skipped the 5th answer
        ("consensus", "consensus", 10, pytest.approx(0.8)),
    ]
    consensus = table[2]
    # Confusion [[3, 0, 0], [1, 1, 0], [0, 1, 4]]: rows 3, 2, 5; columns 4, 2, 4. p_o = 0.8,
    # p_e = (12 + 4 + 20) / 100 = 0.36: kappa = 0.44 / 0.64 = 11/16. Expected counts r_i c_j / 10; linear
    # disagreement observed 2, expected 9.6: 1 - 2/9.6 = 19/24; quadratic observed 2, expected 16: 7/8.
    assert (consensus["kappa"], consensus["kappa_linear"], consensus["kappa_quadratic"]) == (
        pytest.approx(11 / 16),
        pytest.approx(19 / 24),
        pytest.approx(7 / 8),
    )
    assert consensus["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=[judge_grades(), CONSENSUS], level_of_measurement="ordinal")
    )
    for name in ("exact", "kappa", "kappa_quadratic", "alpha_ordinal"):
        assert consensus[f"{name}_low"] <= consensus[name] <= consensus[f"{name}_high"]
    counts = [r["count"] for r in rows(agreement, "confusion", judge=JUDGE_LABEL, versus="consensus")]
    assert counts == [3, 0, 0, 1, 1, 0, 0, 1, 4]


def test_raters_against_each_other_the_ceiling(agreement):
    pair, everyone = agreement["tables"]["rater_vs_rater"]
    assert (pair["first"], pair["second"], pair["n"], pair["exact"]) == (
        "ann",
        "bob",
        9,
        pytest.approx(6 / 9),
    )
    ann = [item[5] for item in ITEMS]
    bob = [float("nan") if item[6] is None else item[6] for item in ITEMS]
    assert (everyone["first"], everyone["n"], everyone["exact"], everyone["kappa"]) == (
        "all raters",
        9,
        None,
        None,
    )
    assert everyone["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=[ann, bob], level_of_measurement="ordinal")
    )


def test_agreement_by_turn_group_model_and_answer_length(agreement):
    table = rows(agreement, "by_group", judge=JUDGE_LABEL)
    assert [(r["breakdown"], r["group"], r["n"], r["exact"]) for r in table] == [
        ("turn group", "T0", 4, 1.0),
        ("turn group", "T1", 4, 0.5),
        ("turn group", "T2", 2, 1.0),
        ("model", "alpha", 5, pytest.approx(0.8)),
        ("model", "beta", 5, pytest.approx(0.8)),
        # Terciles of 10, 20, ... 100 words: 40 and 70.
        ("answer length", "short (<= 40 words)", 4, 0.75),
        ("answer length", "medium (<= 70 words)", 3, pytest.approx(2 / 3)),
        ("answer length", "long (> 70 words)", 3, 1.0),
    ]


def test_the_papers_metrics_on_human_and_judge_grades(agreement):
    table = rows(agreement, "paper_metrics", judge=JUDGE_LABEL, model="alpha")
    values = {r["metric"]: (r["n"], r["judge_value"], r["human_value"]) for r in table}
    # alpha's judge grades 1, 1, 0 | 0.5, 1; consensus 1, 0.5, 0 | 0.5, 1 (conversations c1 | c2).
    assert values == {
        "mean": (5, pytest.approx(70), pytest.approx(60)),
        "mean T0": (2, 75, 75),
        "mean T1": (2, 100, 75),
        "mean T2": (1, 0, 0),
        "mean T3-5": (0, None, None),
        "mean T6+": (0, None, None),
        # T0 minus the mean of later turns: 75 - 200/3 and 75 - 50.
        "degradation (T0 - later turns)": (5, pytest.approx(25 / 3), pytest.approx(25)),
        # 1 - (max - min) per conversation: c1 0 and c2 0.5, for both.
        "CCS (>= 2 rated turns)": (2, pytest.approx(25), pytest.approx(25)),
        "EPR (consecutive rated turns)": (0, None, None),  # no rated turn after a wrong one
    }
    [difference] = [r["difference"] for r in table if r["metric"] == "mean"]
    assert difference == pytest.approx(10)
    # beta's consensus 0, 0, 1 | 0, 1: 1 wrong of the 3 turns after a wrong one; its judge: 0 of 2.
    [beta] = rows(
        agreement, "paper_metrics", judge=JUDGE_LABEL, model="beta", metric="EPR (consecutive rated turns)"
    )
    assert (beta["judge_value"], beta["human_value"]) == (0, pytest.approx(100 / 3))


def test_length_check_at_equal_human_grade(agreement):
    table = rows(agreement, "length_check", judge=JUDGE_LABEL)
    assert [tuple(r.values())[2:] for r in table] == [
        # consensus 0: 30, 60 words (judge 0, 0) vs 70, 90 words (judge 0.5, 0)
        (0.0, 65.0, 2, 0.0, 2, 0.25, 0.25),
        (0.5, 30.0, 1, 1.0, 1, 0.5, -0.5),
        (1.0, 65.0, 2, 1.0, 2, 1.0, 0.0),
    ]
    [correlation] = rows(agreement, "length_correlation", judge=JUDGE_LABEL)
    expected = stats.spearmanr(
        [item[3] for item in ITEMS], [j - c for j, c in zip(judge_grades(), CONSENSUS, strict=True)]
    )
    assert (correlation["n"], correlation["spearman_r"]) == (10, pytest.approx(expected.statistic))


def test_drift_between_epochs_of_one_judge(agreement):
    [row] = agreement["tables"]["drift"]
    assert row == {
        "judge": "openai/gpt-4o (judge_rubric_v1)",
        "samples": "temperature=0.7 epoch 0; temperature=0.7 epoch 1",
        "runs": "r1, r2",
        "n": 10,
        "drift": pytest.approx(0.2),
        "drift_low": row["drift_low"],
        "drift_high": row["drift_high"],
        "drift_undefined": None,
    }
    assert 0 <= row["drift_low"] <= 0.2 <= row["drift_high"] <= 1
    assert [j["label"] for j in agreement["judges"]] == [
        JUDGE_LABEL,
        JUDGE_LABEL.replace("epoch 0", "epoch 1"),
    ]


def test_notes_with_clinicians_and_two_epochs(agreement):
    assert agreement["notes"] == [POSITION_NOTE]
    assert agreement["simulated_raters"] is False


def test_simulated_raters_are_labelled_and_a_lone_rater_has_no_ceiling(tmp_path):
    result = agreement_of(tmp_path, {"sim-a": "simulated"}, rejudged=False)
    assert [r["versus"] for r in result["tables"]["judge_vs_raters"]] == [
        "sim-a (simulated)",
        "consensus (simulated)",
    ]
    assert result["tables"]["rater_vs_rater"] == [] and result["tables"]["drift"] == []
    assert [note.split(":")[0] for note in result["notes"]] == [
        "Agreement is with SIMULATED raters (sim-a (simulated))",
        "Rater vs rater",
        "Self-consistency",
        "Position check",
    ]
    terminal = summary_table(result)
    assert terminal.rows[0][:3] == ["J1", "consensus (simulated)", "10"]
    assert terminal.caption.endswith(f"J1 = {JUDGE_LABEL}")
    # Every table compared with the raters names them simulated.
    for name in ("by_group", "paper_metrics", "length_check", "length_correlation"):
        assert {row["versus"] for row in result["tables"][name]} == {"consensus (simulated)"}
    titles = [table.title for table in build_tables(result)]
    assert "Confusion: judge grade (rows) vs consensus (simulated) grade (columns)" in titles
    assert "Judge vs consensus (simulated) by turn group, model and answer length" in titles


def test_a_run_of_other_answers_is_refused(tmp_path):
    labels = write_labels(tmp_path / "labels")
    sampled = write_judged_run(tmp_path / "r1", "r1", judge_grades())
    other = write_judged_run(tmp_path / "r9", "r9", judge_grades(), other_answer_at=3)
    with pytest.raises(UserError) as error:
        check_agreement_inputs([sampled, other], labels)
    assert str(error.value) == (
        f"{other} holds another answer to sampled item i3 (alpha, baseline, c2, turn 0) than the sampled run "
        "r1: pass that run or runs re-judged from it"
    )


def test_a_labels_folder_without_ratings_is_refused(tmp_path):
    labels = write_labels(tmp_path / "labels", rated=False)
    with pytest.raises(UserError) as error:
        load_labels(labels)
    assert (str(error.value), error.value.option) == (
        f"{labels} has no ratings.parquet: run `threadmed labels import {labels} CSV...` first",
        "--labels",
    )


def test_written_files_hold_the_same_rows(agreement, tmp_path):
    out = write_agreement(agreement, tmp_path / "out")
    assert sorted(path.name for path in out.iterdir()) == sorted(
        ["agreement.json", "agreement.md", "fig_agreement.png"]
        + [f"{name}.csv" for name in agreement["tables"]]
    )
    assert json.loads((out / "agreement.json").read_text()) == json.loads(json.dumps(agreement))
    with (out / "judge_vs_raters.csv").open() as file:
        stored = list(csv.DictReader(file))
    assert [(r["versus"], r["n"], r["exact"]) for r in stored] == [
        ("ann", "10", "0.7"),
        ("bob", "9", str(7 / 9)),
        ("consensus", "10", "0.8"),
        # the judge at epoch 1: 1, 0.5, 0, 0.5, 1, 0, 1, 1, 0, 1
        ("ann", "10", "0.8"),
        ("bob", "9", str(7 / 9)),
        ("consensus", "10", "0.9"),
    ]
    markdown = (out / "agreement.md").read_text()
    assert (
        "### Rater vs rater: the ceiling a judge is compared with" in markdown and POSITION_NOTE in markdown
    )


def test_rater_names_stored_before_import_refused_formulas_are_inert_in_the_files(tmp_path):
    """Ratings stored under names a spreadsheet runs (`labels import` refuses them now) or that hold markup:
    the CSV cells start with a quote and read back whole (the figure's labels too); the Markdown shows the
    markup as text."""
    formula, markup = '=HYPERLINK("http://example.com","x")', "<img src=x onerror=alert(1)>"
    result = agreement_of(tmp_path, {formula: "clinician", markup: "clinician"}, rejudged=False)
    out = write_agreement(result, tmp_path / "out")
    with (out / "rater_vs_rater.csv").open(newline="") as file:
        pair = next(csv.DictReader(file))
    assert (pair["first"], pair["second"]) == (markup, "'" + formula)
    stored = read_csv_rows(out / "rater_vs_rater.csv")
    assert [(row["first"], row["second"]) for row in stored] == [(markup, formula), ("all raters", "")]
    with (out / "judge_vs_raters.csv").open(newline="") as file:
        assert [row["versus"] for row in csv.DictReader(file)] == [markup, "'" + formula, "consensus"]
    markdown = (out / "agreement.md").read_text()
    assert "<img" not in markdown and "raters: &lt;img src=x onerror=alert(1)&gt;, =HYPERLINK" in markdown


def test_a_rating_of_an_item_not_sampled_is_refused(tmp_path):
    labels = write_labels(tmp_path / "labels")
    ratings = pq.read_table(labels / "ratings.parquet").to_pylist()
    ratings[0]["item_id"] = "i99"
    pq.write_table(pa.Table.from_pylist(ratings, schema=RATINGS.schema), labels / "ratings.parquet")
    with pytest.raises(UserError) as error:
        load_labels(labels)
    assert str(error.value) == (
        f"{labels / 'ratings.parquet'} rates item i99, which items.parquet does not hold: import the ratings "
        f"again with `threadmed labels import {labels} CSV... --replace`"
    )


def test_a_rater_stored_as_both_simulated_and_clinician_is_refused(tmp_path):
    """The last kind labelled the rater: a simulated rater read as a clinician, the SIMULATED note gone."""
    labels = write_labels(tmp_path / "labels", {"drX": "simulated"})
    ratings = pq.read_table(labels / "ratings.parquet").to_pylist()
    ratings[-1]["rater_kind"] = "clinician"
    pq.write_table(pa.Table.from_pylist(ratings, schema=RATINGS.schema), labels / "ratings.parquet")
    with pytest.raises(UserError) as error:
        load_labels(labels)
    assert str(error.value) == (
        f"{labels / 'ratings.parquet'} names rater 'drX' both simulated and clinician: a rater is one kind; "
        f"import its ratings again with `threadmed labels import {labels} CSV... --replace`"
    )


def test_the_sampled_run_must_be_found(tmp_path):
    """The sampled run's answers are the reference: a re-judged run alone needs the sampled run's folder."""
    labels = load_labels(write_labels(tmp_path / "labels"))
    rejudged = write_judged_run(tmp_path / "r2", "r2", EPOCH_1, judge={**JUDGE, "epoch": 1})
    with pytest.raises(UserError) as error:
        load_judges(labels, [rejudged])
    assert str(error.value) == (
        f"the sampled run r1 is not among the run folders and {tmp_path / 'r1'} is gone: pass its folder"
    )
    write_judged_run(tmp_path / "r1", "r1", judge_grades())  # where sample.json says it is
    assert [judge.run_id for judge in load_judges(labels, [rejudged])] == ["r2"]


def test_degenerate_agreement_is_undefined_with_its_reason_in_every_view(tmp_path):
    """ann rates the first five answers and bob the last five, both everything 1: the raters never rated one
    same answer, and the consensus (1 everywhere) gives one grade only. Kappa would be 0 and alpha -0.3 on
    these, numbers that measure nothing: each is undefined, with the reason, in the JSON, every CSV, the
    Markdown and the terminal; and no interval comes from fewer than 10 items."""
    labels_dir = write_labels(tmp_path / "labels")
    ratings = [
        {**row, "rater": "ann" if int(row["item_id"][1:]) < 5 else "bob", "grade": 1.0}
        for row in pq.read_table(labels_dir / "ratings.parquet").to_pylist()
        if row["rater"] == "ann"
    ]
    pq.write_table(pa.Table.from_pylist(ratings, schema=RATINGS.schema), labels_dir / "ratings.parquet")
    labels = load_labels(labels_dir)
    agreement = compute_agreement(
        labels, load_judges(labels, [write_judged_run(tmp_path / "r1", "r1", judge_grades())]), SETTINGS
    )
    constant = (
        "undefined: consensus gave only 1 on the 10 items, so there is no agreement beyond chance to measure"
    )
    [row] = rows(agreement, "judge_vs_raters", versus="consensus")
    assert {name: (row[name], row[f"{name}_undefined"]) for name in STATISTICS[1:]} == dict.fromkeys(
        STATISTICS[1:], (None, constant)
    )
    assert (row["exact"], row["exact_undefined"]) == (0.5, None)  # the judge gave 1 to 5 of the 10
    [ann] = rows(agreement, "judge_vs_raters", versus="ann")
    few = "no interval: 5 items, fewer than 10"
    assert (ann["exact"], ann["exact_low"], ann["exact_undefined"]) == (0.6, None, few)
    pair, everyone = agreement["tables"]["rater_vs_rater"]
    assert (pair["n"], pair["kappa"], pair["kappa_undefined"]) == (
        0,
        None,
        "undefined: no item graded by both",
    )
    assert (everyone["alpha_ordinal"], everyone["alpha_ordinal_undefined"]) == (
        None,
        "undefined: no item graded twice or more",
    )
    out = write_agreement(agreement, tmp_path / "out")
    with (out / "judge_vs_raters.csv").open(newline="") as file:
        [stored] = [line for line in csv.DictReader(file) if line["versus"] == "consensus"]
    assert (stored["kappa"], stored["kappa_undefined"], stored["exact"]) == ("", constant, "0.5")
    markdown = (out / "agreement.md").read_text()
    assert f"| {JUDGE_LABEL} | consensus | 10 | 0.50 [" in markdown
    assert (
        f"| {constant} | {constant} |" in markdown
        and "0.60 (no interval: 5 items, fewer than 10)" in markdown
    )
    assert (
        "| ann | bob | 0 | undefined: no item graded by both | undefined: no item graded by both |"
        in markdown
    )
    terminal = summary_table(agreement)
    assert terminal.rows[0][4:] == [constant] * 3
    assert terminal.rows[1] == ["R1", "R2", "0", *["undefined: no item graded by both"] * 4]


def test_a_judge_at_another_temperature_is_a_sample_whose_differences_are_drift(tmp_path):
    """The README's advice (`judge rerun --temperature 0.7 --epoch 1` beside a run at 0) measures the judge's
    drift: the run at another temperature is a sample of the same judge (model and rubric)."""
    labels = load_labels(write_labels(tmp_path / "labels"))
    runs = [
        write_judged_run(
            tmp_path / "r1", "r1", judge_grades(), judge={**JUDGE, "params": {"temperature": 0}}
        ),
        write_judged_run(tmp_path / "r2", "r2", EPOCH_1, judge={**JUDGE, "epoch": 1}),
    ]
    [row] = compute_agreement(labels, load_judges(labels, runs), SETTINGS)["tables"]["drift"]
    assert (row["judge"], row["samples"], row["n"], row["drift"]) == (
        "openai/gpt-4o (judge_rubric_v1)",
        "temperature=0 epoch 0; temperature=0.7 epoch 1",
        10,
        pytest.approx(0.2),
    )
