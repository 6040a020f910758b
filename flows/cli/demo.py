"""`threadmed demo`: everything offline on a generated dump, from synthesis to the report."""

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.render import console, print_build_summary, print_report_summary
from tasks.core.preflight import check_writable_folder

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "deployments" / "eval.demo.yaml"


@reports_errors("workdir")
def demo(
    workdir: Annotated[Path, typer.Option(help="Folder for the demo's dumps, lake, dataset and run.")] = Path(
        "demo"),
    posts: Annotated[int, typer.Option(min=500, help="Posts in the generated dump.")] = 12_000,
    seed: Annotated[int, typer.Option(help="Seed of the generated dump.")] = 7,
) -> None:  # fmt: skip
    """Run everything offline on a generated dump: synthesize, build, evaluate two baselines, report.

    The baselines (threadmed/retrieval, threadmed/deferral) and the judge (threadmed/overlap-judge)
    are built in, so no key is needed; the overlap judge is a heuristic, not comparable to an LLM judge.
    """
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
