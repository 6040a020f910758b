"""`threadmed consult`: the full-cycle consultation benchmark: mine its inquiry logic, build cases, evaluate
agents, report."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from flows.cli.case_sets import CaseSetCommand, case_set_commands
from flows.cli.errors import reports_errors, warn
from flows.cli.render import command_group, console
from flows.cli.server_launch import start_temporary_server
from tasks.benchmarks.consult.inquiry.settings import MiningSettings
from tasks.core.preflight import UserError, check_writable_folder

app = command_group(
    "Full-cycle consultation benchmark: history taking, diagnosis, treatment and follow-up with a "
    "process-aware simulated patient."
)
MINING_DEFAULTS = MiningSettings()

CONSULT_COMMANDS = CaseSetCommand("consult", solvers="agents", epoch="episodes", browser="an episode browser")


@app.command()
@reports_errors("out")
def mine(
    corpora: Annotated[
        Path,
        typer.Option(
            help="Folder (searched recursively) or CSV file holding ACI-Bench CSVs (a dialogue column) "
            "and/or PriMock57 transcripts (*_doctor.TextGrid, *_patient.TextGrid)."
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Output folder: templates.json, transitions.json, partial_orders.json, sequences.json, "
            "reference.json, manifest.json, report.md."
        ),
    ],
    k: Annotated[int, typer.Option(min=1, help="k-means clusters of the physician questions.")] = (
        MINING_DEFAULTS.k
    ),
    seed: Annotated[int, typer.Option(help="k-means seed.")] = MINING_DEFAULTS.seed,
    naming_threshold: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Clusters whose nearest template is less similar are `other`."),
    ] = MINING_DEFAULTS.naming_threshold,
    smoothing: Annotated[
        float, typer.Option(min=0.0, help="Additive smoothing of the Markov transition counts (> 0).")
    ] = MINING_DEFAULTS.smoothing,
    precedence_share: Annotated[
        float, typer.Option(help="a precedes b when a is asked first in at least this share of dialogues.")
    ] = MINING_DEFAULTS.precedence_share,
    min_support: Annotated[
        int, typer.Option(min=1, help="Dialogues asking both templates needed for a partial order.")
    ] = MINING_DEFAULTS.min_support,
    embedding_model: Annotated[
        str | None,
        typer.Option(help="litellm embedding model for questions and templates (online); default TF-IDF."),
    ] = None,
) -> None:
    """Mine question templates, the Markov policy and partial orders (the `consult-mine` flow): same corpora
    and options, same bytes."""
    start_temporary_server()  # while the flow is imported
    from flows.consult_mine import consult_mine
    from tasks.benchmarks.consult.inquiry.corpora import CorpusError, dialogues_with_doctor, read_corpora

    settings = MiningSettings(
        k=k,
        seed=seed,
        naming_threshold=naming_threshold,
        smoothing=smoothing,
        precedence_share=precedence_share,
        min_support=min_support,
        embedding_model=embedding_model,
    )
    check_writable_folder(out, "--out")
    try:  # before any flow runs: a path with no corpus is one line, not a failed flow run
        dialogues, untagged = dialogues_with_doctor(read_corpora(corpora), corpora)
    except CorpusError as error:
        raise UserError(str(error)) from None
    if untagged:
        warn(f"{corpora}: {untagged:,} dialogues without a doctor turn (no speaker tags) skipped")
    consult_mine(corpora=str(corpora), out_dir=str(out), settings=settings)
    templates = json.loads((out / "templates.json").read_text())
    reference = json.loads((out / "reference.json").read_text())
    named = [c for c in templates["clusters"] if c["template_id"] != "other"]
    other = templates["questions"] - sum(c["size"] for c in named)
    console.print(
        f"[green]{len(dialogues):,} dialogues[/green], {templates['questions']:,} physician questions: "
        f"{len({c['template_id'] for c in named})} templates found, `other` "
        f"{other / max(templates['questions'], 1):.1%}; empirical Hit@{reference['k']} "
        f"{reference['hit_at_k_mean']}, POVR {reference['povr_mean']}; written to {out}"
    )


def parse_weights(text: str | None, option: str) -> dict[str, float]:
    """`a,b` (equal weights) or `a=2,b=1` -> {key: weight}; a malformed weight is a one-line user error."""
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, _, weight = item.partition("=")
        try:
            weights[key.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise UserError(f"{option}: '{item}' is not NAME or NAME=WEIGHT") from None
    return weights


@app.command()
@reports_errors("out")
def cases(
    out: Annotated[Path, typer.Option(help="Case set folder: cases.jsonl and manifest.json.")],
    n: Annotated[int, typer.Option(min=1, help="Cases to generate.")] = 40,
    seed: Annotated[int, typer.Option(help="Seed of every choice: same seed and options, same bytes.")] = 0,
    departments: Annotated[
        str | None,
        typer.Option(help="Department mix: `respiratory,ent` (equal) or `respiratory=2,ent=1`; default all."),
    ] = None,
    difficulty: Annotated[
        str, typer.Option(help="Difficulty mix: `easy,medium,hard` or `easy=2,hard=1`.")
    ] = "easy,medium,hard",
    from_file: Annotated[
        Path | None,
        typer.Option(help="Hand-written YAML or JSON list of cases instead of generating.", exists=True),
    ] = None,
    profiles_from: Annotated[
        Path | None,
        typer.Option(
            help="Folder of Synthea FHIR bundles (`synthea -p N -o DIR` writes DIR/fhir): each case takes a "
            "real patient's age and sex that fit its diagnosis.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Generate a consultation case set from the KB (the `consult-cases` flow), or check and write a
    hand-written one."""
    from pydantic import ValidationError

    from tasks.benchmarks.consult.cases import CaseGenerationSettings, case_set_manifest, load_case_file
    from tasks.benchmarks.consult.cases.synthea_profiles import read_synthea_demographics

    check_writable_folder(out, "--out")
    try:
        settings = CaseGenerationSettings(
            n=n,
            seed=seed,
            departments=parse_weights(departments, "--departments"),  # type: ignore[arg-type]
            difficulty=parse_weights(difficulty, "--difficulty"),  # type: ignore[arg-type]
            profiles_from=str(profiles_from.resolve()) if profiles_from else None,
        )
        if profiles_from is not None:  # before any flow runs: a folder with no patient is one line
            read_synthea_demographics(profiles_from)
        if from_file is not None:  # before any flow runs: a bad case is one line naming file and case
            load_case_file(from_file)
    except ValidationError as error:
        raise UserError("; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())) from None
    except ValueError as error:
        raise UserError(str(error)) from None
    start_temporary_server()  # while the flow is imported
    from flows.consult_cases import consult_cases

    consult_cases(out_dir=str(out), settings=settings, from_file=str(from_file) if from_file else None)
    counts = case_set_manifest(out)["counts"]
    mix = ", ".join(f"{key} {value}" for key, value in counts["difficulty"].items())
    console.print(
        f"[green]{counts['cases']:,} cases[/green] over {len(counts['departments'])} departments ({mix}); "
        f"written to {out}"
    )


@case_set_commands(app, CONSULT_COMMANDS)
def evaluate_options(
    max_questions: Annotated[
        int | None, typer.Option(min=0, help="History-taking questions before the diagnosis.")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="FQR judge: a litellm model string (default: the offline heuristic judge)."),
    ] = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Run a consultation episode (history taking, diagnosis, treatment plan, follow-ups) for every case
    with every agent and score it, the follow-up answers by the judge (the `consult-evaluate` flow).

    Every agent call is kept in RUN_DIR/ledger: re-run the same command to finish a run after a crash or
    an outage; nothing already paid is asked again. Exits 1 if calls failed, 75 if batches (--batch) are
    still in flight, 3 if the spending cap (--max-cost) stopped it.
    """
    return {"judge": judge} if judge else {}, {"max_questions": max_questions}


def print_consult_report(report_dir: Path) -> None:
    """The report's four stage tables beside the composite, and where its files are."""
    from flows.cli.render import print_benchmark_report
    from tasks.benchmarks.consult.notes import report_notes
    from tasks.benchmarks.consult.terminal import terminal_tables

    print_benchmark_report(report_dir, terminal_tables, report_notes, console)


@app.command("check-plan")
def check_plan_command(
    profile: Annotated[
        Path | None,
        typer.Option(
            help="The patient: a YAML or JSON file with a case's `profile` (age, sex, pregnant, "
            "breastfeeding, renal_impairment, hepatic_impairment, allergies, medications).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            help='The plan as an agent writes it: a JSON list of items with "drug", "dose", "unit", '
            '"frequency_per_day", "days", "route" (or {"plan": [...], "advice": "..."}).',
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(help="A KB condition id the patient has (its contraindications apply); repeatable."),
    ] = None,
    batch: Annotated[
        Path | None,
        typer.Option(
            help='Many plans instead: JSON Lines (- for standard input), each {"id": ..., "profile": {...}, '
            '"plan": [...]} (optional "conditions"); prints one JSON line per case, an error line with its '
            "line number for a case that cannot be checked; the exit code is the worst case's.",
            dir_okay=False,
            allow_dash=True,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Check a treatment plan for a patient with the safety critic: each item's ingredients and daily
    amounts, then every violation with its severity, rule and source. Exit 0 when the plan passes, 1 when
    a hard violation fires or an item could not be checked (unverified), 2 on bad input."""
    from tasks.benchmarks.consult.kb.loading import load_kb
    from tasks.benchmarks.consult.plan_check import EXIT_CODES, check_plan, read_plan, read_profile

    if batch is not None:
        if profile is not None or plan is not None:
            raise typer.BadParameter("give --batch alone, or --profile and --plan", param_hint="--batch")
        raise typer.Exit(_check_batch(batch))
    if profile is None or plan is None:
        raise typer.BadParameter("give --profile and --plan (or --batch FILE.jsonl)", param_hint="--plan")
    kb = load_kb()
    try:
        result = check_plan(read_profile(profile, kb), read_plan(plan, kb), kb, condition or ())
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_plan_check(result)
    raise typer.Exit(EXIT_CODES[result.verdict])


def _check_batch(path: Path) -> int:
    """Check every case of a JSON Lines file (or standard input) and print one JSON line each; the exit
    code of the worst."""
    import sys

    from tasks.benchmarks.consult.kb.loading import load_kb
    from tasks.benchmarks.consult.plan_check import EXIT_CODES, check_batch

    kb = load_kb()
    worst = 0
    try:
        stream = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    except OSError as error:
        raise typer.BadParameter(f"{path}: {error.strerror}", param_hint="--batch") from None
    with stream:
        try:
            for result in check_batch(stream, kb):
                typer.echo(json.dumps(result))
                worst = max(worst, EXIT_CODES[result["verdict"]])
        except UnicodeDecodeError as error:
            message = f"{path}: not UTF-8 text ({error.reason})"
            raise typer.BadParameter(message, param_hint="--batch") from None
    return worst


def print_plan_check(result) -> None:
    """The resolved plan, the findings and the verdict, as tables."""
    from rich.table import Table

    items = Table("as written", "KB ingredient", "a day", "checked", title="Plan", title_justify="left")
    for item in result.items:
        if not item.ingredients:
            items.add_row(escape(item.drug), "—", "—", "unverified")
        for position, ingredient in enumerate(item.ingredients):
            daily = "—" if ingredient.daily is None else f"{ingredient.daily:g} {ingredient.unit}"
            checked = ("yes" if item.checked else "unverified") if position == 0 else ""
            items.add_row(escape(item.drug) if position == 0 else "", ingredient.generic, daily, checked)
    console.print(items)
    if result.violations:
        findings = Table(
            "severity", "kind", "drug", "why (rule · source)", title="Findings", title_justify="left"
        )
        for v in result.violations:
            drug = v.drug + (f" + {v.other}" if v.other else "")
            why = f"{escape(v.detail)}\n[dim]{escape(v.entry)} · {escape(v.source)}[/dim]"
            findings.add_row(v.severity, v.kind, escape(drug), why)
        console.print(findings)
    colour = {"pass": "green", "unsafe": "red", "unverified": "yellow"}[result.verdict]
    meaning = {
        "pass": "no hard violation, every item checked",
        "unsafe": "a hard violation fires",
        "unverified": "no hard violation, but an item could not be checked: not known to be safe",
    }[result.verdict]
    console.print(f"[{colour}]{result.verdict}[/{colour}]: {meaning}")


@app.command("kb")
def kb_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """What the consultation knowledge base holds (conditions, drugs, products, interaction and
    contraindication rules, dosing facts, the references they cite) and what each optional source adds."""
    from rich.table import Table

    from tasks.benchmarks.consult.kb.loading import load_kb
    from tasks.benchmarks.consult.kb.summary import kb_summary

    summary = kb_summary(load_kb())
    if as_json:
        typer.echo(summary.model_dump_json(indent=2))
        return
    parts = Table("part", "entries", title=f"Consultation KB v{summary.version}", title_justify="left")
    for part, count in summary.entries.items():
        parts.add_row(part, str(count))
    console.print(parts)
    details = {
        "conditions by department": summary.departments,
        "contraindications by level": summary.contraindications,
        **{f"interactions ({origin})": counts for origin, counts in summary.interactions.items()},
        "entries by reference cited": summary.references,
    }
    for title, counts in details.items():
        console.print(f"[bold]{title}[/bold]: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    sources = Table("optional source", "licence", "adds", title="Optional sources", title_justify="left")
    for source in summary.sources:
        sources.add_row(source.package, source.licence, escape(source.adds))
    console.print(sources)
