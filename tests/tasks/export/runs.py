"""Small runs of every benchmark for the export tests: the report tests' hand-made runs, each claimed by its
benchmark as an evaluate command claims its folder."""

from pathlib import Path

from tasks.core.run_folder import claim_run_folder
from tests.tasks.benchmarks.consult.report_fixtures import make_run as make_consult_run
from tests.tasks.benchmarks.snomed.test_report import make_run as make_snomed_run
from tests.tasks.benchmarks.threadmed.test_report import make_run as make_threadmed_run


def make_runs(root: Path) -> dict[str, Path]:
    """benchmark -> a run folder of it under `root`."""
    runs = {
        "threadmed": make_threadmed_run(root / "threadmed"),
        "snomed": make_snomed_run(_folder(root / "snomed"), "r1", ["alpha", "beta"]),
        "consult": make_consult_run(_folder(root / "consult"), "r1", ["alpha", "beta"]),
    }
    for benchmark, run_dir in runs.items():
        claim_run_folder(run_dir, benchmark)
    return runs


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path
