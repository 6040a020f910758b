import hashlib
import json
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tasks.core.files import (
    read_verified_bytes,
    safe_load_yaml,
    write_atomic,
    write_bytes_atomic,
    write_folder_atomic,
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


def write_pair(a: bytes, b: bytes):
    def write(folder):
        (folder / "a").write_bytes(a)
        (folder / "b").write_bytes(b)

    return write


def test_a_folder_is_replaced_whole_or_not_at_all(tmp_path):
    folder = write_folder_atomic(tmp_path / "set", write_pair(b"1", b"1"), ("a", "b"))
    write_folder_atomic(folder, write_pair(b"2", b"2"), ("a", "b"))
    assert [(folder / name).read_bytes() for name in "ab"] == [b"2", b"2"]

    def interrupted(target):
        (target / "a").write_bytes(b"3")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_folder_atomic(folder, interrupted, ("a", "b"))
    assert [(folder / name).read_bytes() for name in "ab"] == [b"2", b"2"]
    assert [p.name for p in tmp_path.iterdir()] == ["set"]


def test_a_folder_holding_other_files_is_never_replaced(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"holds files other than a, b \(notes\.txt\)"):
        write_folder_atomic(tmp_path / "mine", write_pair(b"1", b"1"), ("a", "b"))
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_bytes_are_read_only_when_their_sha256_is_the_recorded_one(tmp_path):
    (tmp_path / "f").write_bytes(b"data")
    assert read_verified_bytes(tmp_path / "f", hashlib.sha256(b"data").hexdigest()) == b"data"
    with pytest.raises(ValueError) as error:
        read_verified_bytes(tmp_path / "f", hashlib.sha256(b"other").hexdigest())
    assert str(error.value) == (
        f"{tmp_path / 'f'} does not match the sha256 its manifest records "
        f"({hashlib.sha256(b'other').hexdigest()[:12]})"
    )


PROJECT_ROOT = Path(__file__).resolve().parents[3]
YAML_FILES = sorted(
    path.relative_to(PROJECT_ROOT)
    for path in (PROJECT_ROOT / "tasks").rglob("*.yaml")
    if "__pycache__" not in path.parts
)


@pytest.mark.parametrize("relative", YAML_FILES, ids=str)
def test_the_projects_yaml_reads_as_yaml_safe_load_reads_it(relative):
    text = (PROJECT_ROOT / relative).read_text(encoding="utf-8")
    assert safe_load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3", "a: b: c", "x:\n\t- 1", "{x: 1"])
def test_text_that_is_not_yaml_raises_yaml_safe_loads_error_with_its_caret(text):
    with pytest.raises(yaml.YAMLError) as expected:
        yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError) as raised:
        safe_load_yaml(text)
    assert (str(raised.value), "^" in str(raised.value)) == (str(expected.value), True)
