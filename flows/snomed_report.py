"""snomed-report: report SNOMED benchmark runs from their stored conversations, predictions and scores; calls
no model. The flow is the consultation report's (flows/case_sets.py)."""

from flows.case_sets import case_set_report_flow
from tasks.benchmarks.snomed.benchmark import SNOMED

snomed_report = case_set_report_flow(
    SNOMED,
    __name__,
    "Metrics, figures and index.html (a conversation browser) of SNOMED runs, also as artifacts.",
)
