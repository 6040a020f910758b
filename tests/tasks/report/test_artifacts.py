"""Tables and Markdown published as Prefect artifacts (from a flow run), keyed by prefix and table key."""

import pytest
from prefect import flow
from prefect.artifacts import Artifact

from tasks.core.provenance import folder_tag
from tasks.report.artifacts import publish_markdown, publish_report, publish_tables, report_prefix
from tasks.report.tables import Table


@pytest.mark.usefixtures("prefect_harness")
def test_tables_with_rows_become_table_artifacts_and_empty_ones_are_skipped():
    tables = [
        Table("overall", "Overall", ["Model", "n"], [["m", "3"]], "Judged turns."),
        Table("coverage", "Coverage", ["Model"], [], "Not computed."),
    ]
    assert flow(publish_tables)(tables, "report-run-7") == ["report-run-7-overall"]
    artifact = Artifact.get(key="report-run-7-overall")
    assert artifact is not None and artifact.type == "table"
    assert artifact.description == "Overall. Judged turns."
    assert Artifact.get(key="report-run-7-coverage") is None


@pytest.mark.usefixtures("prefect_harness")
def test_markdown_is_published_under_its_key():
    key = flow(publish_markdown)("# Report", "report-run-7-summary", "Runs: 7.")
    assert key == "report-run-7-summary"
    artifact = Artifact.get(key="report-run-7-summary")
    assert artifact is not None and artifact.data == "# Report"


@pytest.mark.usefixtures("prefect_harness")
def test_a_report_publishes_its_tables_then_its_markdown_summary():
    tables = [Table("overall", "Overall", ["Model", "n"], [["m", "3"]], "Judged turns.")]
    keys = flow(publish_report)(tables, "# Report", "report-run-8", "Runs: 8.")
    assert keys == ["report-run-8-overall", "report-run-8-summary"]
    summary = Artifact.get(key="report-run-8-summary")
    assert summary is not None and summary.data == "# Report" and summary.description == "Runs: 8."


def test_report_prefixes_name_the_first_run_how_many_more_and_the_report_folder(tmp_path):
    """Two report folders of runs with one run id (two run folders of the same settings) never share keys."""
    first, second = tmp_path / "a" / "report", tmp_path / "b" / "report"
    assert report_prefix("report", ["0123456789ab"], first) == f"report-0123456789ab-{folder_tag(first)}"
    assert report_prefix("report", ["0123456789ab"], second) == f"report-0123456789ab-{folder_tag(second)}"
    assert folder_tag(first) != folder_tag(second)
    runs = ["0123456789ab", "ba9876543210", "00ff00ff00ff"]
    assert report_prefix("snomed-report", runs, first) == (
        f"snomed-report-0123456789ab-and-2-more-{folder_tag(first)}"
    )
