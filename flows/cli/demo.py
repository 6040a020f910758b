"""`threadmed demo`: every benchmark offline on generated data, from synthesis to the report."""

from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.render import console, print_build_summary, print_report_summary
from flows.cli.server_launch import start_temporary_server
from tasks.core.preflight import check_writable_folder

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "deployments" / "eval.demo.yaml"
SNOMED_DEMO_CLINICIANS = ("threadmed/prevalence", "threadmed/checklist")
SNOMED_DEMO_DATE = date(2024, 1, 1)
CONSULT_CASES = 36  # four per department
# The demo's second judge, graded once at temperature 0 and twice (epochs 1, 2) at 0.7 to show its drift.
DEMO_SECOND_JUDGE = "threadmed/coverage-judge"
DEMO_SAMPLING_TEMPERATURE = 0.7
DEMO_RATED_TURNS = 60
# Two simulated raters (not clinicians): each replaces this share of its heuristic grades by another grade.
DEMO_RATERS = ("simulated-a", "simulated-b")
DEMO_RATER_ERROR_RATE = 0.15
DEMO_AGREEMENT_RESAMPLES = 1_000


@reports_errors("workdir")
def demo(
    workdir: Annotated[Path, typer.Option(help="Folder for the demo's dumps, lake, dataset and run.")] = Path(
        "demo"),
    posts: Annotated[int, typer.Option(min=500, help="Posts in the generated dump.")] = 12_000,
    seed: Annotated[int, typer.Option(help="Seed of the generated dump and patients.")] = 7,
    snomed_patients: Annotated[
        int, typer.Option(min=2, help="Synthea patients generated for the SNOMED benchmark (about 2 s each).")
    ] = 12,
) -> None:  # fmt: skip
    """Run every benchmark offline: ThReadMed-QA, SNOMED on generated patients, consultation on KB cases.

    ThReadMed-QA: synthesize, build, evaluate two baselines (threadmed/retrieval, threadmed/deferral)
    judged by threadmed/overlap-judge (a heuristic, not comparable to an LLM judge), report; then re-judge
    the stored answers with threadmed/coverage-judge (once at temperature 0, twice at 0.7 for its drift),
    report the judge panel, sample a rating page, rate it with two SIMULATED raters and print the judges'
    agreement with them. SNOMED: generate Synthea patients, build cases, interview the offline patient with
    threadmed/prevalence and threadmed/checklist, report; write patient-oracle training data with the
    offline teacher and score the offline patient on the patient bench. Consultation: generate cases from
    the knowledge base, run the three scripted reference agents through history taking, diagnosis,
    treatment and follow-up (FQR graded by the offline threadmed/consult-judge heuristic), report.
    Everything is built in: no key, no network.
    """
    start_temporary_server()  # while the flows are imported
    from flows.build_dataset import build_dataset
    from flows.evaluate_models import evaluate_models
    from flows.synthesize_dumps import synthesize_dumps

    check_writable_folder(workdir, "--workdir")
    dumps = workdir / "dumps"
    synthesize_dumps(out_dir=str(dumps), posts=posts, seed=seed, layout="subreddit")
    dataset = Path(build_dataset(
        submissions=[str(dumps / "AskDocs_submissions.zst")],
        comments=[str(dumps / "AskDocs_comments.zst")],
        out_dir=str(workdir / "build"),
        lake_dir=str(workdir / "data_lake"),
    ))  # fmt: skip
    print_build_summary(dataset)
    run_dir = workdir / "run"
    state = evaluate_models(
        dataset_dir=str(dataset), run_dir=str(run_dir), config_file=str(DEMO_CONFIG), return_state=True
    )
    print_report_summary(run_dir / "report", console)
    if not state.is_completed():
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(1)
    judge_demo(workdir / "judges", run_dir, seed=seed)
    snomed_demo(workdir / "snomed", patients=snomed_patients, seed=seed)
    consult_demo(workdir / "consult", seed=seed)
    export_demo_runs([run_dir, workdir / "snomed" / "run", workdir / "consult" / "run"], workdir / "inspect")


def export_demo_runs(run_dirs: list[Path], out: Path) -> None:
    """The demo's runs as Inspect eval logs in one folder, and the command that opens them."""
    from flows.cli.export import Format, export_run, print_how_to_open

    console.rule("Every run as Inspect eval logs")
    files = [file for run_dir in run_dirs for file in export_run(run_dir, out, Format.inspect, console)]
    print_how_to_open(Format.inspect, out, files[0], console)


def judge_demo(workdir: Path, run_dir: Path, seed: int) -> None:
    """The judge measured, on the demo run: its answers re-judged (none asked again) by a second offline
    judge, the judge panel's report, a rating page of sampled turns, two simulated raters imported, and the
    table of every judge's agreement with them. The raters are offline heuristics with a set error rate,
    labelled simulated everywhere: a real round has clinicians rate the page (README, "A clinician rating
    round")."""
    from flows.cli.judge_agreement import agreement
    from flows.cli.labels import import_ratings, sample, simulate
    from flows.rejudge import rejudge_run
    from flows.report import report_runs
    from tasks.evals.rejudge import JudgeChoices

    console.rule("ThReadMed-QA's judge, measured: a second judge, a panel, simulated raters")
    judges = {
        "coverage": JudgeChoices(model=DEMO_SECOND_JUDGE, temperature=0),
        **{
            f"coverage-t{DEMO_SAMPLING_TEMPERATURE}-e{epoch}": JudgeChoices(
                model=DEMO_SECOND_JUDGE, temperature=DEMO_SAMPLING_TEMPERATURE, epoch=epoch
            )
            for epoch in (1, 2)
        },
    }
    rejudged = [workdir / name for name in judges]
    for out_dir, choices in zip(rejudged, judges.values(), strict=True):
        state = rejudge_run(
            run_dir=str(run_dir), out_dir=str(out_dir), judge=choices, report=False, return_state=True
        )
        if not state.is_completed():
            console.print(f"[red]{state.message}[/red]")
            raise typer.Exit(1)
    judged_runs = [run_dir, *rejudged]
    panel_dir = Path(
        report_runs(run_dirs=[str(folder) for folder in judged_runs], out_dir=str(workdir / "panel"))
    )
    print_report_summary(panel_dir, console)
    labels_dir = workdir / "labels"
    sample(run_dir=run_dir, out=labels_dir, n=DEMO_RATED_TURNS, seed=seed)
    rater_files = [labels_dir / f"{rater}.csv" for rater in DEMO_RATERS]
    for index, (rater, csv_file) in enumerate(zip(DEMO_RATERS, rater_files, strict=True)):
        simulate(
            labels_dir=labels_dir,
            rater=rater,
            out=csv_file,
            error_rate=DEMO_RATER_ERROR_RATE,
            seed=seed + index,
        )
    import_ratings(labels_dir=labels_dir, csv_files=rater_files, replace=True)
    agreement(
        run_dirs=judged_runs,
        labels=labels_dir,
        out=None,
        lake=Path("data_lake"),
        seed=seed,
        resamples=DEMO_AGREEMENT_RESAMPLES,
    )


def snomed_demo(workdir: Path, patients: int, seed: int) -> None:
    """The SNOMED benchmark on generated Synthea patients: the offline clinicians interview the offline
    patient; half the patients are the train split the prevalence baseline counts codes in."""
    from flows.cli.snomed import print_snomed_report
    from flows.cli.snomed_oracle import oracle_demo
    from flows.snomed_cases import snomed_cases
    from flows.snomed_evaluate import snomed_evaluate
    from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
    from tasks.data.patients.synthea_patients import generate_patients

    console.rule("SNOMED diagnosis benchmark")
    bundles = generate_patients(
        out_dir=str(workdir / "synthea"), patients=patients, seed=seed, reference_date=SNOMED_DEMO_DATE
    )
    cases = snomed_cases(
        source=bundles,
        out_dir=str(workdir / "cases"),
        settings=CaseSetSettings(train_share=0.5),
    )
    run_dir = workdir / "run"
    state = snomed_evaluate(
        cases_dir=cases, run_dir=str(run_dir), models=list(SNOMED_DEMO_CLINICIANS), return_state=True
    )
    print_snomed_report(run_dir / "report", console)
    if not state.is_completed():
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(1)
    oracle_demo(workdir, Path(cases))


def consult_demo(workdir: Path, seed: int) -> None:
    """The consultation benchmark's four stages on generated cases, with the three scripted reference agents
    (asks nothing, follows the mined expert policy, asks every template); the four stage tables and the
    composite are printed."""
    from flows.cli.consult import print_consult_report
    from flows.consult_cases import consult_cases
    from flows.consult_evaluate import consult_evaluate
    from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings
    from tasks.benchmarks.consult.reference_agents import REFERENCE_AGENTS

    console.rule("Full-cycle consultation benchmark: history, diagnosis, treatment, follow-up")
    cases = consult_cases(
        out_dir=str(workdir / "cases"), settings=CaseGenerationSettings(n=CONSULT_CASES, seed=seed)
    )
    run_dir = workdir / "run"
    state = consult_evaluate(
        cases_dir=cases, run_dir=str(run_dir), models=list(REFERENCE_AGENTS), return_state=True
    )
    print_consult_report(run_dir / "report")
    if not state.is_completed():
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(1)
