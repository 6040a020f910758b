import os
import re

from hypothesis import given
from hypothesis import strategies as st

from tasks.core.provenance import (
    FOLDER_TAG_DIGITS,
    artifact_key,
    code_provenance,
    folder_tag,
    git_commit,
    git_state,
    run_artifact_key,
    settings_sha256,
)


def test_artifact_keys_are_lowercase_dashed_and_at_most_100_characters():
    assert artifact_key("Evaluation summary", "Run_ab12") == "evaluation-summary-run-ab12"
    assert artifact_key("--x--") == "x"
    assert len(artifact_key("report", *["0123456789ab"] * 20)) == 100


def test_two_run_folders_of_one_run_id_never_share_an_artifact_key(tmp_path):
    """Same settings, same run id: the folder's tag tells their artifacts apart; the run id is kept."""
    first, second = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    keys = {run_artifact_key("evaluation-summary", "0123456789ab", folder) for folder in (first, second)}
    assert keys == {f"evaluation-summary-0123456789ab-{folder_tag(folder)}" for folder in (first, second)}
    assert len(keys) == 2


def test_a_folder_has_one_tag_however_it_is_spelt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spellings = ("runs/a", "./runs/a/", "runs/x/../a", tmp_path / "runs" / "a")
    tags = {folder_tag(spelling) for spelling in spellings}
    assert len(tags) == 1 and len(tags.pop()) == FOLDER_TAG_DIGITS


@given(
    kind=st.sampled_from(["evaluation-summary", "evaluation-progress", "batch-wave"]),
    run_id=st.text(alphabet="0123456789abcdef", min_size=12, max_size=12),
    # Every name a POSIX file system can hold (bytes but NUL and the separator), as Python reads it.
    folder=st.binary(min_size=1, max_size=40)
    .map(lambda name: os.fsdecode(name.replace(b"\x00", b"").replace(os.sep.encode(), b"")))
    .filter(bool),
    parts=st.lists(st.text(max_size=10), max_size=3),
)
def test_a_run_artifact_key_is_a_valid_key_that_keeps_its_run_id_and_folder_tag(kind, run_id, folder, parts):
    key = run_artifact_key(kind, run_id, "/runs/" + folder, *parts)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key) and len(key) <= 100
    assert key.startswith(f"{kind}-{run_id}-{folder_tag('/runs/' + folder)}")


def test_the_code_that_ran_is_named_by_commit_tree_state_and_versions():
    state = git_state()
    assert state["commit"] == git_commit() and state["commit"] is not None and len(state["commit"]) == 40
    assert isinstance(state["dirty"], bool)
    provenance = code_provenance(["pyarrow", "no-such-package"])
    assert provenance["packages"]["no-such-package"] is None and provenance["packages"]["pyarrow"]
    assert provenance["python"].count(".") == 2


def test_equal_settings_hash_alike_whatever_their_key_order():
    assert settings_sha256({"a": 1, "b": [2, {"c": None}]}) == settings_sha256(
        {"b": [2, {"c": None}], "a": 1}
    )
    assert settings_sha256({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    assert settings_sha256({"a": 1}) != settings_sha256({"a": 2})
