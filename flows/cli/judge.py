"""`threadmed judge`: the judges of stored runs as measured instruments: grade a run's answers again with
another judge (`rerun`), and measure judges against clinicians' ratings and themselves (`agreement`)."""

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.evaluate import (
    ApiKeyEnv,
    BatchPoll,
    BatchRoles,
    BatchWait,
    MaxConcurrency,
    MaxCost,
    MaxTokens,
    Timeout,
)
from flows.cli.judge_agreement import agreement
from flows.cli.render import command_group
from tasks.core.preflight import UserError

app = command_group(
    "Judges of stored runs: re-judge a run's answers with another judge, rubric, temperature or epoch; "
    "measure a judge against clinicians' ratings and against itself."
)


@app.command()
@reports_errors("out")
def rerun(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A finished run folder of `threadmed evaluate` or `threadmed consult evaluate`.",
            exists=True,
            file_okay=False,
        ),
    ],
    judge: Annotated[
        str,
        typer.Option(help="The new judge: a litellm model string (the run's own judge keeps its settings)."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="New run folder: the run's answers, the new judge's grades, its ledger and manifest.json. "
            "Run the same command again to resume: only missing judge calls are made."
        ),
    ],
    rubric: Annotated[
        Path | None,
        typer.Option(help="Rubric prompt file; default: the run judge's.", exists=True, dir_okay=False),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(min=0, help="The judge's temperature (default: the config's, 0).")
    ] = None,
    epoch: Annotated[
        int,
        typer.Option(
            min=0,
            help="Repeat index of the grading: another epoch asks every verdict anew (at temperature > 0 a "
            "new sample: the judge's own drift).",
        ),
    ] = 0,
    api_base: Annotated[
        str | None,
        typer.Option(
            help="Send the judge to this OpenAI-compatible endpoint. It gets no key unless --api-key-env "
            "names one."
        ),
    ] = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: MaxConcurrency = None,
    max_tokens: MaxTokens = None,
    timeout: Timeout = None,
    max_cost: MaxCost = None,
    batch: BatchRoles = None,
    batch_wait: BatchWait = None,
    batch_poll: BatchPoll = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the judge calls, tokens and dollars; call nothing.")
    ] = False,
    report: Annotated[bool, typer.Option(help="Write NEW_RUN_DIR/report at the end.")] = True,
) -> None:
    """Grade the stored answers of a run with another judge into a new run folder (the `rejudge-run` flow).

    No answer is asked again: the run's answers are replayed (those it lacks stay failed or not run), and
    only the judge is called, through the new folder's ledger. The new folder reports like any run, and
    beside the old one. Exits 1 if judge calls failed, 75 if batches (--batch judge) are still in flight, 3
    if the spending cap (--max-cost) stopped it.
    """
    from flows.cli.evaluate import checked_settings, run_or_estimate, split_list
    from tasks.benchmarks.registry import BENCHMARKS
    from tasks.evals.rejudge import JudgeChoices, read_source_run, rejudge_settings, rejudgeable, rejudging

    if (roles := split_list(batch)) not in (None, ["judge"]):
        raise UserError("only the judge is called when re-judging: give --batch judge", "--batch")
    choices = JudgeChoices(
        model=judge,
        rubric=rubric,
        temperature=temperature,
        epoch=epoch,
        max_tokens=max_tokens,
        api_base=api_base,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        timeout_s=timeout,
        max_cost_usd=max_cost,
        batch=roles is not None,
        batch_wait_s=batch_wait,
        batch_poll_s=batch_poll,
    )
    source = read_source_run(run_dir)
    bench = rejudgeable(source, BENCHMARKS)
    settings = checked_settings(lambda: rejudge_settings(source, bench.config_model, choices, out))

    def run_flow():
        from flows.rejudge import rejudge_run

        absolute = choices.model_copy(update={"rubric": choices.rubric.resolve() if choices.rubric else None})
        return rejudge_run(
            run_dir=str(run_dir), out_dir=str(out), judge=absolute, report=report, return_state=True
        )

    # The run's notes (printed with its summary) say that the answers were replayed, and from which run.
    rejudge = rejudging(bench, source)
    run_or_estimate(rejudge.card, lambda: rejudge, settings, out, dry_run, run_flow)


app.command()(agreement)
