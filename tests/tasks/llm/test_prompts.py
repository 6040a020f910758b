import hashlib

import pytest

from tasks.llm.prompts import load_prompt

PROMPT = """version: triage_v2
author: test

=== system ===
You triage $condition.

=== user ===
Patient: $question
"""


def test_a_prompt_file_is_read_into_its_version_sections_and_hash(tmp_path):
    path = tmp_path / "triage_v2.txt"
    path.write_text(PROMPT, encoding="utf-8")
    prompt = load_prompt(path)
    assert prompt.version == "triage_v2"
    assert prompt.sections == {"system": "You triage $condition.", "user": "Patient: $question"}
    assert prompt.sha256 == hashlib.sha256(PROMPT.encode()).hexdigest()
    assert prompt.render("user", question="Is it broken?") == "Patient: Is it broken?"


def test_the_hash_changes_with_any_edit_even_outside_the_sections(tmp_path):
    (tmp_path / "a.txt").write_text(PROMPT, encoding="utf-8")
    (tmp_path / "b.txt").write_text(PROMPT.replace("author: test", "author: other"), encoding="utf-8")
    assert load_prompt(tmp_path / "a.txt").sha256 != load_prompt(tmp_path / "b.txt").sha256


def test_a_missing_value_is_an_error_not_a_silent_gap(tmp_path):
    (tmp_path / "p.txt").write_text(PROMPT, encoding="utf-8")
    with pytest.raises(KeyError, match="condition"):
        load_prompt(tmp_path / "p.txt").render("system")


def test_a_prompt_without_version_is_refused(tmp_path):
    (tmp_path / "p.txt").write_text("=== user ===\nhello\n")
    with pytest.raises(ValueError, match="version"):
        load_prompt(tmp_path / "p.txt")
