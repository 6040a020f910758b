import json
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.core.files import (
    write_atomic,
    write_bytes_atomic,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)


def test_each_kind_of_content_is_written_whole_into_new_folders(tmp_path):
    table = pa.table({"n": [1, 2]})
    write_bytes_atomic(tmp_path / "a" / "b.bin", b"\x00\x01")
    write_text_atomic(tmp_path / "a" / "c.txt", "héllo")
    write_json_atomic(tmp_path / "a" / "d.json", {"path": tmp_path, "n": 1})
    write_parquet_atomic(tmp_path / "a" / "e.parquet", table)
    assert (tmp_path / "a" / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "a" / "c.txt").read_text(encoding="utf-8") == "héllo"
    assert (tmp_path / "a" / "d.json").read_text() == json.dumps({"path": str(tmp_path), "n": 1}, indent=2)
    assert pq.read_table(tmp_path / "a" / "e.parquet").equals(table)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.bin", "c.txt", "d.json", "e.parquet"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = write_text_atomic(tmp_path / "x.txt", "old")

    def broken(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, broken)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_writers_in_parallel_threads_never_share_a_temporary_file(tmp_path):
    path = tmp_path / "same.txt"
    texts = [str(i) * 10_000 for i in range(8)]
    threads = [threading.Thread(target=write_text_atomic, args=(path, text)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert path.read_text() in texts and [p.name for p in tmp_path.iterdir()] == ["same.txt"]
