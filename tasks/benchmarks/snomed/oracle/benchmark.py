"""oracle-data as a `Benchmark` record, so the shared run machinery (plan, ledger, resume, batch mode, dry
run, progress, manifest) makes its calls: the teacher is the run's model, a case is a job, writing its pairs
is the solve step and validating them the score step; its "report" is the oracle data folder."""

import json
from functools import partial
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.cases.loading import check_case_set
from tasks.benchmarks.snomed.config import PROMPTS_DIR
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.benchmarks.snomed.oracle.contracts import ORACLE_PAIRS, TEACHER_REPLIES
from tasks.benchmarks.snomed.oracle.dataset import write_oracle_dataset
from tasks.benchmarks.snomed.oracle.plan import (
    build_plan,
    check_every_split_has_pairs,
    estimate_job,
    load_cases,
)
from tasks.benchmarks.snomed.oracle.solver import validate_pairs, write_pairs
from tasks.core.strict import StrictModel
from tasks.evals.card import BenchmarkCard
from tasks.evals.outputs import EpisodeCounts, RunTables, column_mean, summarize_by_epoch
from tasks.evals.protocol import Benchmark

PAIRS = EpisodeCounts(
    counts={"kept": ("status", "kept"), "rejected": ("status", "rejected"), "failed": ("status", "failed")},
    score=column_mean("is_kept"),
    score_label="kept %",
    score_note="share of the teacher's pairs that passed validation (failed calls excluded)",
)


class DatasetSettings(StrictModel):
    """The oracle data folder has no settings of its own: the run's config says everything."""


def rewrite_dataset(run_dirs: list[str], out_dir: str | None, settings: Any) -> str:
    """The oracle data folder of a finished run, rebuilt in place from its tables and manifest."""
    run_dir = Path(run_dirs[0])
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    config = OracleDataConfig.model_validate(manifest["config"])
    return str(
        write_oracle_dataset(run_dir=run_dir, cases_dir=Path(manifest["dataset"]["dir"]), config=config)
    )


ORACLE_DATA = Benchmark(
    card=BenchmarkCard(
        name="snomed-oracle-data",
        title="SNOMED patient oracle: teacher-written question/answer pairs per case, validated",
        config_model=OracleDataConfig,
        check_inputs=check_case_set,
        check_sample=check_every_split_has_pairs,
    ),
    load_cases=load_cases,
    plan=build_plan,
    solve=write_pairs,
    score=validate_pairs,
    tables=RunTables(solved=(TEACHER_REPLIES,), scored=(ORACLE_PAIRS,)),
    summarize=partial(summarize_by_epoch, how=PAIRS),
    estimate_job=estimate_job,
    report=rewrite_dataset,
    report_settings=DatasetSettings,
    contracts=(TEACHER_REPLIES, ORACLE_PAIRS),
    prompts_dir=PROMPTS_DIR,
)
