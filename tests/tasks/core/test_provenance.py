from tasks.core.provenance import artifact_key, code_provenance, git_commit, git_state


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
