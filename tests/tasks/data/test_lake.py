from pathlib import Path

from tasks.data.lake import expand_dump_paths, source_key


def test_same_named_dumps_in_two_folders_get_distinct_stable_keys(tmp_path):
    first, second = tmp_path / "2019/RC.zst", tmp_path / "2020/RC.zst"
    keys = [source_key(first), source_key(second)]
    assert keys[0] != keys[1]
    assert all(key.startswith("RC.zst-") and len(key) == len("RC.zst-") + 8 for key in keys)
    assert source_key(tmp_path / "2019/../2019/RC.zst") == keys[0]


def test_a_dump_named_twice_is_ingested_once(tmp_path, monkeypatch):
    dump = tmp_path / "RC_2019-01.zst"
    dump.write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert expand_dump_paths([str(dump), str(tmp_path), "RC_*.zst", "RC_2019-01.zst"]) == [str(dump)]
    assert Path(expand_dump_paths(["RC_2019-01.zst"])[0]) == Path("RC_2019-01.zst")
