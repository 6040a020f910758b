import logging
import tempfile
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tasks.core.files import write_text_atomic
from tasks.llm import call_store, segments
from tasks.llm.call_store import CallStore
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.store_sources import Segment

START = datetime(2026, 1, 1, tzinfo=UTC)


def record(key: str, status: str, seconds: int, text: str | None, order: int = 0) -> CallRecord:
    """A record finished `seconds` (and `order` µs: no two writes at one time) after START."""
    at = START + timedelta(seconds=seconds, microseconds=order)
    return CallRecord(key=key, model="m", status=status, text=text, started_at=at, finished_at=at)


def outcome_of(written: list[CallRecord], key: str) -> CallRecord | None:
    """A key's outcome as the store promises it: its earliest success, else its latest failure."""
    own = [r for r in written if r.key == key]
    succeeded = [r for r in own if r.status == "ok"]
    if succeeded:
        return min(succeeded, key=lambda r: r.finished_at)
    return max(own, key=lambda r: r.finished_at) if own else None


# (key, status, seconds, which of three processes writes it, whether a reader looks now)
WRITES = st.lists(
    st.tuples(
        st.sampled_from(["aa", "bb", "cc"]),
        st.sampled_from(["ok", "failed"]),
        st.integers(0, 3),
        st.integers(0, 2),
        st.booleans(),
    ),
    max_size=20,
)


def fresh(folder: Path) -> CallLedger:
    """The ledger as a process that has read nothing yet finds it."""
    call_store._stores = OrderedDict()
    return CallLedger(folder)


@given(WRITES)
def test_every_reader_agrees_on_each_key_s_outcome_whoever_wrote_it_and_after_compaction(writes):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        writers = [CallStore(folder) for _ in range(3)]
        follower = CallStore(folder)  # a reader that reads as the records come
        written = []
        for index, (key, status, seconds, writer, look) in enumerate(writes):
            written.append(record(key, status, seconds, f"reply {index}", order=index))
            writers[writer].write(written[-1])
            if look:
                follower.refresh()
                follower.lookup(key)
        follower.refresh()
        expected = [outcome_of(written, key) for key in ("aa", "bb", "cc")]
        outcomes = follower.outcome_records()  # successes first, then failures, each by key
        assert outcomes == sorted((r for r in expected if r), key=lambda r: (r.status != "ok", r.key))
        assert list(fresh(folder).records()) == outcomes

        for writer in writers:  # each run ends: its segment is sealed and merged
            writer.compact()
        assert list((folder / "segments").glob("*.jsonl")) == []
        assert list(fresh(folder).records()) == outcomes
        for key in ("aa", "bb", "cc"):
            success = next((r for r in outcomes if r.key == key and r.status == "ok"), None)
            assert fresh(folder).lookup(key) == success


def test_a_reader_that_reads_each_line_another_process_appends_finds_every_record(tmp_path) -> None:
    writer, follower = CallStore(tmp_path), CallStore(tmp_path)
    follower.refresh()
    lines = 3 * segments.MAX_INDEX_CHUNKS  # its index of the writer's segment is combined along the way
    written = [record(f"k{index:03d}", "ok", index, f"reply {index}") for index in range(lines)]
    for line in written:
        writer.write(line)
        follower.refresh()
        assert follower.lookup(line.key) == line
    assert follower.outcome_records() == written
    [segment] = [source for source in follower._sources if isinstance(source, Segment)]
    assert segment.rows().column(0).num_chunks <= segments.MAX_INDEX_CHUNKS


def test_an_old_one_file_per_call_ledger_is_migrated_once_with_a_line_naming_what_did_not_read(
    tmp_path, caplog
):
    done, failing, retried = record("aa11", "ok", 0, "x"), record("bb22", "failed", 1, None), None
    retried = record("cc33", "ok", 2, "y")
    for old in (done, failing, retried, record("cc33", "failed", 1, None)):
        write_text_atomic(tmp_path / old.status / old.key[:2] / f"{old.key}.json", old.model_dump_json())
    (tmp_path / "ok" / "aa" / "aa11.json.123.456.tmp").write_text('{"key": "aa11", "mod')
    with caplog.at_level(logging.WARNING, logger="tasks.llm.legacy_ledger"):
        assert list(fresh(tmp_path).records()) == [done, retried, failing]
        assert list(fresh(tmp_path).records()) == [done, retried, failing]  # read from the compacted file
    (compacted,) = (tmp_path / "compacted").glob("*.parquet")
    assert [r.getMessage() for r in caplog.records if r.name == "tasks.llm.legacy_ledger"] == [
        f"ledger {tmp_path}: 3 calls (2 succeeded) read from the old layout (one JSON file per call) into "
        f"compacted/{compacted.name}; 1 files were not whole records and read as calls not made: "
        "ok/aa/aa11.json.123.456.tmp"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == [".compaction.lock", "compacted"]


def test_a_segment_another_machine_writes_in_the_shared_folder_is_read_and_never_compacted_from_here(
    tmp_path, monkeypatch
):
    """Two machines sharing a run folder (a network file system): each appends to its own segment; this one
    reads the other's records as they come, and its compaction leaves the other's segment alone (its writer
    may still be writing: only a process of this machine's boot is known to be gone)."""
    monkeypatch.setattr(segments, "this_machine", lambda: ("other-host", "0f0f0f0f", "4026531836"))
    elsewhere = CallStore(tmp_path)
    elsewhere.write(record("aa", "ok", 0, "from the other machine", order=0))
    monkeypatch.undo()
    here = CallStore(tmp_path)
    here.write(record("bb", "ok", 1, "from this machine", order=1))

    here.compact()
    (other_segment,) = (tmp_path / "segments").glob("*.jsonl")
    assert other_segment.name.startswith("other-host_0f0f0f0f_4026531836_")
    elsewhere.write(record("cc", "failed", 2, None, order=2))  # it goes on writing after the compaction
    reader = fresh(tmp_path)
    assert [(r.key, r.text) for r in reader.records()] == [
        ("aa", "from the other machine"),
        ("bb", "from this machine"),
        ("cc", None),
    ]
