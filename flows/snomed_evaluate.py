"""snomed-evaluate: every clinician interviews every sampled case's patient (each epoch), then scoring.

One Prefect task per (clinician, case) runs the interview of each epoch and scores it (flows/evaluation.py).
Re-run the same parameters to finish a run: the ledger makes only the calls still missing. Its parameters
are the consultation flow's (flows/case_sets.py): `overrides` names the patient (`roles`) and `epochs`,
`max_turns`, `disclosure` or `patient_prompt_form` (`settings`).
"""

from flows.case_sets import case_set_evaluate_flow
from flows.snomed_report import snomed_report
from tasks.benchmarks.snomed.benchmark import SNOMED

snomed_evaluate = case_set_evaluate_flow(
    SNOMED,
    snomed_report,
    __name__,
    "Interview and score the sampled SNOMED cases with every clinician: conversations, predictions and "
    "scores (.parquet), manifest.json and report/ in run_dir.",
)
