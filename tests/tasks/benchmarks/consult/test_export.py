"""A consultation run's export says, per episode, which of the agent's outputs did not parse, from the same
SCORES columns the report and the run summary count (test_report.EPISODES: beta's c2)."""

from pathlib import Path

from tasks.benchmarks.consult.export import exported_run
from tests.tasks.benchmarks.consult.report_fixtures import PARSE_ERROR, make_run


def test_each_sample_says_which_outputs_did_not_parse_and_what_a_parser_raised(tmp_path: Path) -> None:
    run = exported_run(make_run(tmp_path, "r2", ["beta"]))
    unparsed = {
        sample.item_id: {
            name: sample.metadata[name]
            for name in ("diagnosis_parse", "plan_parse", "revisions_unparseable", "parse_errors")
        }
        for sample in run.samples["beta"]
    }
    read = {"diagnosis_parse": "ok", "plan_parse": "ok", "revisions_unparseable": 0, "parse_errors": []}
    assert unparsed == {
        "c1": read,
        "c2": {
            "diagnosis_parse": "unparseable",
            "plan_parse": "unparseable",
            "revisions_unparseable": 1,
            "parse_errors": [PARSE_ERROR],
        },
        "c3": read,
    }
