from tasks.core.provenance import artifact_key, code_provenance, git_commit, git_state, settings_sha256


def test_artifact_keys_are_lowercase_dashed_and_at_most_100_characters():
    assert artifact_key("Evaluation summary", "Run_ab12") == "evaluation-summary-run-ab12"
    assert artifact_key("--x--") == "x"
    assert len(artifact_key("report", *["0123456789ab"] * 20)) == 100


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
