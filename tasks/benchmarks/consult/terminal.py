"""The consultation report's stage tables turned sideways for the terminal, one column per model, with the
composite beside them. Pure: metrics.json's content in, Tables out.
"""

from typing import Any

from tasks.benchmarks.consult.tables import (
    DIAGNOSIS_COLUMNS,
    FOLLOW_UP_COLUMNS,
    HISTORY_COLUMNS,
    STAGE_LABELS,
    TREATMENT_COLUMNS,
    judges,
)
from tasks.report.tables import Table, format_number, format_percent, format_share_ci


def _short(model: str) -> str:
    return model.removeprefix("threadmed/consult-")


def _sideways(key: str, title: str, metrics: dict[str, Any], measures: dict[str, Any], caption: str) -> Table:
    models = metrics["models"]
    rows = [[label, *(show(entry) for entry in models.values())] for label, show in measures.items()]
    names = [_short(name) for name in models]
    return Table(
        key=key, title=title, columns=["", *names], rows=rows, caption=caption, right_aligned=tuple(names)
    )


def _shares(columns: dict[str, str]) -> dict[str, Any]:
    return {label: (lambda e, n=name: format_share_ci(e[n])) for name, label in columns.items()}


def terminal_tables(metrics: dict[str, Any]) -> list[Table]:
    """The stage tables turned sideways, one column per model, so an 80-column terminal shows them, and
    the composite beside them."""
    episodes = {"episodes": lambda e: str(e["n_episodes"])}
    history = {
        **episodes,
        **_shares(HISTORY_COLUMNS),
        "questions": lambda e: format_number(e["secondary"]["questions"]),
        "stage score": lambda e: format_percent(e["composite"]["history"]),
    }
    diagnosis = {
        **_shares(DIAGNOSIS_COLUMNS),
        "top-1 %": lambda e: format_percent(e["secondary"]["top1_accuracy"]),
        "differentials unparsed": lambda e: str(e["n_diagnosis_unparseable"]),
        "stage score": lambda e: format_percent(e["composite"]["diagnosis"]),
    }
    treatment = {
        **_shares(TREATMENT_COLUMNS),
        "dose errors %": lambda e: format_percent(e["secondary"]["dose_error_rate"]),
        "unverified %": lambda e: format_percent(e["unverified"]["rate"]),
        "plans unparsed": lambda e: str(e["n_plan_unparseable"]),
        "stage score": lambda e: format_percent(e["composite"]["treatment"]),
    }
    follow_up = {
        **_shares(FOLLOW_UP_COLUMNS),
        "needless churn %": lambda e: format_percent(e["secondary"]["needless_churn"]),
        "revisions unparsed": lambda e: str(e["n_revisions_unparseable"]),
        "graded / ungraded": lambda e: f"{e['fqr_judged']} / {e['fqr_unparseable']}",
        "judge replies cut": lambda e: str(e["n_judge_cut"]),
        "stage score": lambda e: format_percent(e["composite"]["follow_up"]),
    }
    composite = {
        **{
            label: (lambda e, s=stage: format_percent(e["composite"][s]))
            for stage, label in STAGE_LABELS.items()
        },
        "composite": lambda e: format_percent(e["composite"]["score"]),
    }
    return [
        _sideways("history-terminal", "History taking, % [95% CI]", metrics, history, "↓: lower is better."),
        _sideways("diagnosis-terminal", "Diagnosis, % [95% CI]", metrics, diagnosis, ""),
        _sideways(
            "treatment-terminal", "Treatment plan, % [95% CI]", metrics, treatment, "↓: lower is better."
        ),
        _sideways(
            "follow-up-terminal", "Follow-up, % [95% CI]", metrics, follow_up, f"FQR judge: {judges(metrics)}"
        ),
        _sideways(
            "composite-terminal",
            "Composite, %",  # short: the table is narrow with two models and a title does not widen it
            metrics,
            composite,
            "The stage scores of the tables above and their mean; the stage tables show where a model is "
            "weak.",
        ),
    ]
