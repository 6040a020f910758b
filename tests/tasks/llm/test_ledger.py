import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from tasks.llm.ledger import CallLedger, CallRecord

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def record(key: str, status: str = "ok", **fields) -> CallRecord:
    return CallRecord(key=key, model="openai/m", status=status, started_at=NOW, finished_at=NOW, **fields)


def test_a_success_is_found_by_its_key_and_stored_as_one_json_line_any_reader_reads(tmp_path):
    ledger = CallLedger(tmp_path)
    written = record("ab12", text="rest and ice", attempts=1)
    ledger.write(written)
    assert ledger.lookup("ab12").text == "rest and ice"
    assert ledger.lookup("cd34") is None
    (segment,) = (tmp_path / "segments").glob("*.jsonl")
    assert [json.loads(line) for line in segment.read_text().splitlines()] == [
        written.model_dump(mode="json")
    ]


def test_a_failure_is_kept_apart_and_retired_by_a_later_success(tmp_path):
    ledger = CallLedger(tmp_path)
    ledger.write(record("ab12", "failed", attempts=6, error_kind="rate_limit", error="429"))
    assert ledger.lookup("ab12") is None
    assert ledger.last_failure("ab12").attempts == 6

    ledger.write(record("ab12", text="ok", attempts=7))
    assert ledger.last_failure("ab12") is None
    assert [(r.key, r.status) for r in ledger.records()] == [("ab12", "ok")]


def test_records_lists_successes_and_calls_still_failing(tmp_path):
    ledger = CallLedger(tmp_path)
    ledger.write(record("aa01", text="x"))
    ledger.write(record("bb02", "failed", error_kind="server_error"))
    assert sorted((r.key, r.status) for r in CallLedger(tmp_path).records()) == [
        ("aa01", "ok"),
        ("bb02", "failed"),
    ]


# A record as the ledger wrote it before tool calls and JSON output were stored.
RECORD_WITHOUT_TOOL_CALLS = (
    '{"key":"ab12","model":"openai/m","status":"ok","text":"rest and ice","finish_reason":"stop",'
    '"prompt_tokens":9,"completion_tokens":3,"input_cost_usd":0.0,"output_cost_usd":0.0,"latency_s":0.5,'
    '"attempts":1,"error_kind":null,"error":null,"retryable":null,"response_id":"chatcmpl-0",'
    '"started_at":"2024-01-01T00:00:00Z","finished_at":"2024-01-01T00:00:00Z"}'
)


def test_a_record_written_before_tool_calls_were_stored_still_reads(tmp_path):
    (tmp_path / "ok" / "ab").mkdir(parents=True)
    (tmp_path / "ok" / "ab" / "ab12.json").write_text(RECORD_WITHOUT_TOOL_CALLS)
    found = CallLedger(tmp_path).lookup("ab12")
    assert (found.text, found.tool_calls, found.structured) == ("rest and ice", [], None)


def test_tool_calls_and_structured_output_round_trip(tmp_path):
    ledger = CallLedger(tmp_path)
    call = {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    ledger.write(record("ab12", tool_calls=[call], structured={"SCORE": 1.0, "codes": ["44054006"]}))
    assert ledger.lookup("ab12") == record(
        "ab12", tool_calls=[call], structured={"SCORE": 1.0, "codes": ["44054006"]}
    )


# Writes far more than the test waits for, but bounded (200 MB) should the kill never come.
WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from tasks.llm.ledger import CallLedger, CallRecord
ledger = CallLedger(Path(sys.argv[1]))
now = datetime.now(UTC)
for i in range(1_000):
    ledger.write(CallRecord(key=f"{i:08x}", model="m", status="ok", text="x" * 200_000,
                            started_at=now, finished_at=now))
"""


def test_kill_9_while_writing_leaves_only_whole_records_and_a_torn_line_is_never_read(tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], cwd=Path(__file__).parents[3])
    while _segment_bytes(tmp_path) < 20 * 200_000:  # however slowly: it writes far more than 20 records
        assert writer.poll() is None, "the writer stopped"
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()

    (segment,) = (tmp_path / "segments").glob("*.jsonl")
    data = segment.read_bytes()
    records = list(CallLedger(tmp_path).records())
    assert len(records) == data.count(b"\n") >= 20  # every whole line is a record, and only those
    assert all(len(r.text) == 200_000 for r in records)
    compaction = CallLedger(tmp_path).compact()  # its writer is gone: the segment is sealed
    whole = data.rfind(b"\n") + 1
    torn = [f"{segment.name}@{whole}"] if whole < len(data) else []
    assert (compaction.records, compaction.unreadable) == (len(records), torn)
    assert list(CallLedger(tmp_path).records()) == records


def _segment_bytes(ledger_dir: Path) -> int:
    return sum(path.stat().st_size for path in ledger_dir.glob("segments/*.jsonl"))


def test_the_cost_recorded_for_a_call_is_its_success_else_its_latest_failure(tmp_path):
    ledger = CallLedger(tmp_path)
    ledger.write(record("aa01", input_cost_usd=0.25, output_cost_usd=0.5))
    ledger.write(record("bb02", "failed", input_cost_usd=0.125, error_kind="empty_reply"))
    costs = [ledger.recorded_cost_usd(key) for key in ("aa01", "bb02", "cc03")]
    assert (costs, ledger.total_cost_usd()) == ([0.75, 0.125, 0.0], 0.875)


def test_a_source_ledger_s_success_is_read_as_reused_paid_there_and_copied_in_only_when_adopted(tmp_path):
    first, second = CallLedger(tmp_path / "first"), CallLedger(tmp_path / "second")
    paid = {"attempts": 2, "prompt_tokens": 50, "completion_tokens": 9, "input_cost_usd": 0.5}
    first.write(record("ab12", text="grade 1", **paid))
    second.write(record("ab12", text="grade 2", input_cost_usd=0.25))
    ledger = CallLedger(tmp_path / "rejudge")
    ledger.reuse_calls_of([tmp_path / "first", tmp_path / "second"])
    reused = record("ab12", text="grade 1", reused_from=str((tmp_path / "first").resolve()))
    assert ledger.lookup("ab12") == reused  # the first source that holds it; nothing spent here
    assert list(ledger.records()) == []  # a lookup (a dry run's) writes nothing
    assert ledger.adopt("ab12") == reused
    assert list(CallLedger(tmp_path / "rejudge").records()) == [reused]  # the sources are read from its file
    assert (ledger.lookup("cd34"), ledger.adopt("cd34"), ledger.total_cost_usd()) == (None, None, 0.0)


def test_a_reused_success_keeps_what_this_ledger_paid_for_its_own_failed_attempts_and_where_it_was_made(
    tmp_path,
):
    source = CallLedger(tmp_path / "source")
    ledger = CallLedger(tmp_path / "rejudge", sources=[tmp_path / "copy", tmp_path / "source"])
    made_first = "/runs/first/ledger"  # the source reused it in turn: the ledger that paid stays named
    source.write(record("ab12", text="grade", attempts=1, input_cost_usd=0.5, reused_from=made_first))
    ledger.write(record("ab12", "failed", attempts=3, input_cost_usd=0.125, error_kind="server_error"))
    assert ledger.adopt("ab12") == record(
        "ab12", text="grade", attempts=3, input_cost_usd=0.125, reused_from=made_first
    )
    assert (ledger.last_failure("ab12"), ledger.total_cost_usd()) == (None, 0.125)
