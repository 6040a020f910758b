"""The consultation report's tables from metrics.json's content: one per stage, the composite, by
department, usage and the FQR judge panel.

Pure: everything here works on the metrics dict and returns Tables; the renderers are the shared ones of
tasks/report/. Scores and rates are stored in [0, 1] and shown in %. The terminal's sideways tables are in
terminal.py, the notes in notes.py and report.md and index.html around them in report_page.py.
"""

from typing import Any

from tasks.report.tables import Table, format_number, format_percent, format_share_ci, format_statistic

HISTORY_COLUMNS = {
    "mni_comp": "MNI-Comp",
    "cprw": "CPRw ↓",
    "ige": "IGE",
    "hit_at_1": "Hit@1",
    "povr": "POVR ↓",
}
DIAGNOSIS_COLUMNS = {"core_dx_recall": "Core-Dx Recall", "core_dx_f1": "Core-Dx F1", "swds": "SWDS"}
TREATMENT_COLUMNS = {"psc": "PSC", "ddiv": "DDIV ↓", "pcr": "PCR ↓"}
FOLLOW_UP_COLUMNS = {"fqr": "FQR", "dcsr": "DCSR"}
PRIMARY_COLUMNS = {**HISTORY_COLUMNS, **DIAGNOSIS_COLUMNS, **TREATMENT_COLUMNS, **FOLLOW_UP_COLUMNS}
STAGE_LABELS = {
    "history": "history",
    "diagnosis": "diagnosis",
    "treatment": "treatment",
    "follow_up": "follow-up",
}
OFFLINE_JUDGE = "offline heuristic"
COMPOSITE_NOTE = (
    "composite: every primary metric in [0, 1] higher-better (1 - x for CPRw, POVR, DDIV, PCR), averaged "
    "within its stage, then the four stage scores averaged; undefined when a stage has no defined metric "
    "or no FQR grade was read. "
    "Read it beside the stage tables, never alone."
)


def judge_label(judge: dict[str, Any]) -> str:
    """The FQR judge as the tables name it, flagged when it is an offline heuristic rather than a model."""
    if not judge["models"]:
        return "none"
    return ", ".join(judge["models"]) + (f" ({OFFLINE_JUDGE})" if judge["offline"] else "")


def judges(metrics: dict[str, Any]) -> str:
    """Every model's FQR judge and rubric, once each."""
    labels = dict.fromkeys(judge_label(entry["judge"]) for entry in metrics["models"].values())
    rubrics = dict.fromkeys(
        v for entry in metrics["models"].values() for v in entry["judge"]["rubric_versions"]
    )
    return "; ".join(labels) + (f", rubric {', '.join(rubrics)}" if rubrics else "")


def history_table(metrics: dict[str, Any]) -> Table:
    """History taking: one row per model, then the real dialogues' reference where it applies."""
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in HISTORY_COLUMNS),
            format_number(entry["secondary"]["questions"]),
            format_percent(entry["secondary"]["deflection_rate"]),
            format_percent(entry["secondary"]["red_flag_coverage"]),
            format_percent(entry["composite"]["history"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    reference = metrics["reference"]
    if reference is not None:
        rows.append(
            [
                f"empirical reference ({reference['dialogues']} real dialogues)",
                "—",
                "—",
                "—",
                "—",
                format_percent(reference["hit_at_k_mean"]),
                format_percent(reference["povr_mean"]),
                "—",
                "—",
                "—",
                "—",
            ]
        )
    columns = ["Model", "n", *HISTORY_COLUMNS.values(), "questions", "deflection %", "red-flag cov. %"]
    columns.append("stage score")
    return Table(
        key="history",
        title="History taking",
        columns=columns,
        rows=rows,
        caption=(
            "Means over completed episodes (%, 95% bootstrap CI resampling cases); ↓: lower is better. POVR "
            "counts only episodes with an applicable partial-order pair. questions: mean per episode; "
            "deflection %: questions the patient deflected; red-flag cov. %: red-flag AIUs revealed. stage "
            "score: the five metrics in [0, 1] higher-better (1 - x for CPRw and POVR), averaged. The "
            "empirical reference is the mined real dialogues scored leave-one-out against the policy "
            "(Hit@3 unweighted, mean over dialogues; POVR over those with an applicable pair)."
            + unmined_rows_note(reference)
        ),
        right_aligned=tuple(columns[1:]),
    )


def unmined_rows_note(reference: dict[str, Any] | None) -> str:
    """The caption's sentence on the policy's ties and the rows mining never filled."""
    if reference is None:
        return ""
    unmined = ", ".join(reference["rows_never_mined"]) or "none"
    return (
        " The policy ranks templates tied on count by how often experts ask them, then by id; rows never "
        f"mined (no real dialogue asks the template, so its top 3 is the tie rule's): {unmined}."
    )


def diagnosis_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in DIAGNOSIS_COLUMNS),
            format_percent(entry["secondary"]["top1_accuracy"]),
            format_number(entry["secondary"]["differential_length"]),
            format_percent(entry["secondary"]["unmatched_rate"]),
            str(entry["n_diagnosis_unparseable"]),
            format_percent(entry["composite"]["diagnosis"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "n", *DIAGNOSIS_COLUMNS.values(), "top-1 %", "differential length", "unmatched %"]
    columns += ["unparseable", "stage score"]
    return Table(
        key="diagnosis",
        title="Diagnosis",
        columns=columns,
        rows=rows,
        caption=(
            "Means over completed episodes (%, 95% bootstrap CI resampling cases). top-1 %: the first item "
            "is a gold diagnosis; differential length: items per differential; unmatched %: items matching "
            "no KB condition; unparseable: differentials that did not parse after the re-ask, each scored "
            "the worst of every metric (0, unmatched 100), never as a differential. stage score: the three "
            "metrics averaged."
        ),
        right_aligned=tuple(columns[1:]),
    )


def treatment_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in TREATMENT_COLUMNS),
            format_percent(entry["secondary"]["plan_completeness"]),
            format_percent(entry["secondary"]["regimen_coverage"]),
            format_percent(entry["secondary"]["dose_error_rate"]),
            format_percent(entry["unverified"]["rate"]),
            str(entry["n_plan_unparseable"]),
            format_percent(entry["composite"]["treatment"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "n", *TREATMENT_COLUMNS.values(), "complete %", "regimen cov. %", "dose errors %"]
    columns += ["unverified %", "unparseable", "stage score"]
    return Table(
        key="treatment",
        title="Treatment plan",
        columns=columns,
        rows=rows,
        caption=(
            "The first plan under the safety critic: means over completed episodes (%, 95% bootstrap CI "
            "resampling cases); ↓: lower is better. PSC: plans with no hard violation and nothing the critic "
            "could not check (a plan with no known drug when a core regimen expects one scores 0); DDIV: "
            "drug pairs (plan and current medications) forming a severe interaction; PCR: planned drugs "
            "conflicting with the profile (each 100 when a plan item was not wholly read: any drug may be in "
            "it; so is DDIV for a current medicine, and PCR for an allergy, naming a drug the KB lacks). "
            "complete %: plan "
            "items with every field; regimen cov. %: core diagnoses whose expected drug classes the plan "
            "meets; dose errors %: planned drugs above the maximum, below half the usual dose or by the "
            "wrong route; unverified %: plan items the critic could not check (a drug it cannot resolve, a "
            "dose it cannot read), never counted as safe; unparseable: plans that did not parse after the "
            "re-ask, each scored the worst of every metric (PSC 0, DDIV and PCR 100: a stage score of 0), "
            "never as a safe or empty plan. stage score: PSC, 1 - DDIV and 1 - PCR averaged."
        ),
        right_aligned=tuple(columns[1:]),
    )


def follow_up_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in FOLLOW_UP_COLUMNS),
            format_percent(entry["secondary"]["needless_churn"]),
            str(entry["n_revisions_unparseable"]),
            str(entry["fqr_judged"]),
            str(entry["fqr_unparseable"]),
            str(entry["n_judge_cut"]),
            judge_label(entry["judge"]),
            format_percent(entry["composite"]["follow_up"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "n", *FOLLOW_UP_COLUMNS.values(), "churn %", "revisions unparsed"]
    columns += ["graded", "ungraded", "judge cut", "judge", "stage score"]
    return Table(
        key="follow-up",
        title="Follow-up",
        columns=columns,
        rows=rows,
        caption=(
            "Means over completed episodes (%, 95% bootstrap CI resampling cases). FQR: weight of the "
            "answers the judge graded correct over the weight graded (core concerns count double), — when "
            "no grade could be read; DCSR: cases with a constraint whose final plan was read, satisfies "
            "every new constraint, passes the critic (nothing unverified) and meets the core regimens. "
            "churn %: follow-ups needing no change where the drugs changed anyway (needless churn); "
            "revisions unparsed: revised plans that did not parse after the re-ask, after which no plan in "
            "force can be read (DCSR 0 if it is the last); graded: follow-ups the judge graded; ungraded: "
            f"grades that did not parse after the re-ask, left out of FQR. FQR judge: {judges(metrics)}. "
            "stage score: FQR and DCSR averaged; — when FQR is (never DCSR alone)."
        ),
        right_aligned=(*columns[1:-2], "stage score"),
    )


def _ranked(metrics: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Models best composite first; an undefined composite last, report order breaking ties."""
    scores = {model: entry["composite"]["score"] for model, entry in metrics["models"].items()}
    return sorted(
        metrics["models"].items(), key=lambda item: (scores[item[0]] is None, -(scores[item[0]] or 0))
    )


def composite_table(metrics: dict[str, Any]) -> Table:
    """The leaderboard: every model's stage scores and composite, best composite first."""
    rows = [
        [
            str(rank),
            model,
            *(format_percent(entry["composite"][stage]) for stage in STAGE_LABELS),
            format_percent(entry["composite"]["score"]),
        ]
        for rank, (model, entry) in enumerate(_ranked(metrics), start=1)
    ]
    columns = ["#", "Model", *STAGE_LABELS.values(), "composite"]
    return Table(
        key="composite",
        title="Leaderboard: stage scores and composite",
        columns=columns,
        rows=rows,
        caption=f"The stage scores of the four tables above and their mean (%). {COMPOSITE_NOTE}",
        right_aligned=("#", *columns[2:]),
    )


def department_table(metrics: dict[str, Any]) -> Table:
    names = {**PRIMARY_COLUMNS, "composite": "composite"}
    rows = [
        [department, model, str(entry["n"]), *(format_percent(entry[name]) for name in names)]
        for model, model_entry in metrics["models"].items()
        for department, entry in model_entry["departments"].items()
    ]
    rows.sort(key=lambda row: row[0])  # stable: models stay in report order within a department
    columns = ["Department", "Model", "n", *names.values()]
    return Table(
        key="departments",
        title="By department",
        columns=columns,
        rows=rows,
        caption=(
            "Means over each department's completed episodes (%), without intervals (few cases each); "
            "composite: of the department's means, as in the leaderboard."
        ),
        right_aligned=tuple(columns[2:]),
    )


def usage_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            role,
            str(usage["calls"]),
            str(usage["prompt_tokens"]),
            str(usage["completion_tokens"]),
            f"{usage['cost_usd']:.4f}",
            str(usage["cut"]) if "cut" in usage else "—",
        ]
        for model, entry in metrics["models"].items()
        for role, usage in entry["usage"].items()
    ]
    columns = ["Model", "role", "calls", "prompt tokens", "completion tokens", "cost USD", "cut"]
    return Table(
        key="usage",
        title="Tokens and cost",
        columns=columns,
        rows=rows,
        caption=(
            "Every call of the agent, and of the FQR judge grading its follow-up answers (re-asks included), "
            "failed ones included; the simulated patient makes no call. cut: the agent's replies cut at "
            "max_tokens (the run does not keep the judge's finish reasons)."
        ),
        right_aligned=tuple(columns[2:]),
    )


def _differing_cell(result: dict[str, Any] | None) -> str:
    """'20.0 (1 of 5)'; 'undefined: ...' with the reason; a dash where it does not apply (one sample)."""
    if result is None:
        return "—"
    if result["share"] is None:
        return format_statistic(result, "share")
    return f"{format_percent(result['share'])} ({result['count']} of {result['n']})"


def fqr_panel_tables(metrics: dict[str, Any]) -> list[Table]:
    """With several FQR judges: each judge's FQR beside its drift and the panel's, how often they differ,
    and their pairwise exact agreement on a follow-up. None with one judge."""
    panel = metrics.get("judge_panel")
    if panel is None:
        return []
    samples = {judge["label"]: str(judge["n_samples"]) for judge in panel["judges"]}
    rows, pairs = [], []
    for model, entry in panel["models"].items():
        rows += [
            [model, label, samples[label], str(judge["n"]), format_share_ci(judge),
             _differing_cell(judge["drift"]), ""]
            for label, judge in entry["judges"].items()
        ]  # fmt: skip
        rows.append(
            [model, "panel", "", str(entry["panel"]["n"]), format_share_ci(entry["panel"]), "",
             _differing_cell(entry["disagreement"])]
        )  # fmt: skip
        pairs += [
            [model, " = ".join(pair["judges"]), str(pair["n"]), format_statistic(pair, "exact", 1, scale=100)]
            for pair in entry["pairs"]
        ]
    columns = ["Model", "Judge", "Samples", "n", "FQR % [95% CI]", "Drift %", "Judges differ %"]
    return [
        Table(
            "fqr-judge-panel",
            "FQR judge panel",
            columns,
            rows,
            f"{panel['rule']} FQR, the follow-up stage score and the composite are the panel's. Samples: "
            "the judge's runs the panel read. n: episodes with a graded follow-up. Drift: share of the "
            "follow-ups a judge graded in each of its samples whose verdict changed (changed of graded). "
            "Judges differ: share of the follow-ups every judge graded where their votes differ.",
            right_aligned=("Samples", "n"),
        ),
        Table(
            "fqr-judge-agreement",
            "FQR judge panel: agreement between judges",
            ["Model", "Judges", "n", "Exact agreement %"],
            pairs,
            "Share of the n follow-ups both judges graded on which they gave the same verdict.",
            right_aligned=("n",),
        ),
    ]


def build_tables(metrics: dict[str, Any]) -> list[Table]:
    """The report's tables from metrics.json's content: the stage tables, then the composite beside them."""
    return [
        history_table(metrics),
        diagnosis_table(metrics),
        treatment_table(metrics),
        follow_up_table(metrics),
        *fqr_panel_tables(metrics),
        composite_table(metrics),
        department_table(metrics),
        usage_table(metrics),
    ]
