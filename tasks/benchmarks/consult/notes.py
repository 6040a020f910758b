"""What a reader of the consultation report must know before trusting its tables: failed episodes,
unparseable and cut replies, parser errors, mixed run settings, an offline judge, a missing reference.
Pure: metrics.json's content in, sentences out.
"""

from typing import Any

from tasks.benchmarks.consult.tables import OFFLINE_JUDGE, STAGE_LABELS

NOTE_EXAMPLES = 10  # episodes a note names before it refers to metrics.json for the rest


def _places(rows: list[dict[str, Any]]) -> str:
    shown = "; ".join(
        f"{row['model']} / {row['case_id']} / epoch {row['epoch']}" for row in rows[:NOTE_EXAMPLES]
    )
    more = len(rows) - NOTE_EXAMPLES
    return shown + (f"; and {more} more (metrics.json lists all)" if more > 0 else "")


def _count_note(metrics: dict[str, Any], field: str, what: str) -> list[str]:
    """`["5 <what> (model-a 3, model-b 2)."]` from the models' counts in `field`; nothing when all are 0."""
    counts = {model: entry[field] for model, entry in metrics["models"].items() if entry[field]}
    if not counts:
        return []
    per_model = ", ".join(f"{model} {n}" for model, n in counts.items())
    return [f"{sum(counts.values())} {what} ({per_model})."]


def cut_notes(metrics: dict[str, Any]) -> list[str]:
    """The agent's replies cut at max_tokens, by model and stage, and the follow-up answers left ungraded."""
    cut = {
        model: ", ".join(f"{STAGE_LABELS[stage].lower()} {n}" for stage, n in entry["replies_cut"].items())
        for model, entry in metrics["models"].items()
        if entry["replies_cut"]
    }
    if not cut:
        return []
    total = sum(sum(entry["replies_cut"].values()) for entry in metrics["models"].values())
    ungraded = sum(entry["fqr_truncated"] for entry in metrics["models"].values())
    follow_ups = (
        f"{ungraded} cut follow-up answer(s) were left ungraded (the config's `truncated: mark`) and out of "
        "FQR, any other was judged as given"
        if ungraded
        else "a cut follow-up answer was judged as given (the config's `truncated: judge`)"
    )
    return [
        f"{total} agent repl(ies) were cut at max_tokens ({'; '.join(f'{m}: {s}' for m, s in cut.items())}): "
        f"a cut differential or plan is parsed as given; {follow_ups}. A larger max_tokens avoids this."
    ]


def parse_error_notes(metrics: dict[str, Any]) -> list[str]:
    """The replies a parser raised on (a parser bug, not the agent's failure): each was scored as
    unparseable, so the episode stays in every metric."""
    errors = metrics["parse_errors"]
    if not errors:
        return []
    shown = "; ".join(
        f"{row['model']} / {row['case_id']} / epoch {row['epoch']}: {row['error']}"
        for row in errors[:NOTE_EXAMPLES]
    )
    more = len(errors) - NOTE_EXAMPLES
    rest = f"; and {more} more (metrics.json lists all)." if more > 0 else "."
    return [
        f"{len(errors)} agent repl(ies) made a parser raise (a parser bug) and were scored as unparseable, "
        f"their episodes kept: {shown}{rest}"
    ]


def report_notes(metrics: dict[str, Any]) -> list[str]:
    """What a reader must know before trusting the tables: failures, unparseable answers, mixed settings."""
    notes = []
    failed = metrics["failed"]
    if failed:
        notes.append(
            f"{len(failed)} episode(s) failed (provider errors) and are excluded from every metric: "
            f"{_places(failed)}. Re-running the run finishes them."
        )
    notes += _count_note(
        metrics,
        "n_diagnosis_unparseable",
        "differential(s) did not parse after the re-ask and score the worst of every diagnosis metric",
    )
    for field in ("epochs", "max_questions", "gamma", "policy_version"):
        values = {str(run[field]) for run in metrics["runs"]}
        if len(values) > 1:
            notes.append(
                f"The merged runs differ in {field} ({', '.join(sorted(values))}): models from different "
                "runs are not directly comparable."
            )
    notes += _count_note(
        metrics,
        "n_plan_unparseable",
        "treatment plan(s) did not parse after the re-ask and score the worst of every treatment metric "
        "(PSC 0), never as a safe or empty plan",
    )
    notes += _count_note(
        metrics,
        "n_revisions_unparseable",
        "revised plan(s) did not parse after the re-ask: no plan in force can be read after them (DCSR 0 "
        "when no later revision parses)",
    )
    notes += parse_error_notes(metrics)
    notes += _count_note(
        metrics,
        "fqr_unparseable",
        "follow-up grade(s) did not parse after the re-ask and are left out of FQR, not scored 0",
    )
    notes += cut_notes(metrics)
    notes += _count_note(
        metrics,
        "n_judge_cut",
        "follow-up grade(s) are missing because the judge's reply was still cut at its max_tokens after the "
        "last re-ask (judge cut): left out of FQR, not scored 0; a larger judge max_tokens avoids this",
    )
    offline = {
        m
        for entry in metrics["models"].values()
        if entry["judge"]["offline"]
        for m in entry["judge"]["models"]
    }
    if offline:
        notes.append(
            f"FQR is graded by {', '.join(sorted(offline))}, an {OFFLINE_JUDGE} standing in for a judge "
            "model (for demos and tests): its grades are not a clinical assessment."
        )
    if metrics["reference"] is None:
        notes.append("No mined empirical reference was found: the history table has no reference row.")
    return notes
