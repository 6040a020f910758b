"""consult-report: report consultation benchmark runs from their stored messages and scores; calls no model.
The flow is the SNOMED report's (flows/case_sets.py)."""

from flows.case_sets import case_set_report_flow
from tasks.benchmarks.consult.benchmark import CONSULT

consult_report = case_set_report_flow(
    CONSULT,
    __name__,
    "Metrics, tables, figures and index.html of consultation runs, also as Prefect artifacts.",
)
