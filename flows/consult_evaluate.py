"""consult-evaluate: every agent runs a consultation episode with every sampled case's simulated patient
(each epoch), then the episodes are scored.

One Prefect task per (agent, case) runs the episode of each epoch and scores it (flows/evaluation.py).
Re-run the same parameters to finish a run: the ledger makes only the calls still missing. Its parameters are
the SNOMED flow's (flows/case_sets.py): `overrides` names the judge (`roles`) and `epochs` or
`max_questions` (`settings`).
"""

from flows.case_sets import case_set_evaluate_flow
from flows.consult_report import consult_report
from tasks.benchmarks.consult.benchmark import CONSULT

consult_evaluate = case_set_evaluate_flow(
    CONSULT,
    consult_report,
    __name__,
    "Run and score consultation episodes for every agent and case: messages.parquet, scores.parquet, "
    "manifest.json and report/ in run_dir.",
)
