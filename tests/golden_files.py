"""Golden files: the text each prompt version renders, kept in tests/golden/ so prompt changes show in review.

Run a test with UPDATE_GOLDEN=1 to rewrite its golden file, then review the diff.
"""

import os
from pathlib import Path

from tasks.llm.prompts import PromptTemplate

GOLDEN = Path(__file__).parent / "golden"


def render_sections(prompt: PromptTemplate, **values: str) -> str:
    """Every section of `prompt` rendered with `values`, under its `=== name ===` line."""
    return "".join(f"=== {section} ===\n{prompt.render(section, **values)}\n" for section in prompt.sections)


def assert_matches_golden(name: str, rendered: str) -> None:
    """`rendered` equals tests/golden/<name>.render.txt (rewritten first under UPDATE_GOLDEN=1)."""
    golden = GOLDEN / f"{name}.render.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered, encoding="utf-8")
    assert rendered == golden.read_text(encoding="utf-8"), (
        f"{name} changed: UPDATE_GOLDEN=1 pytest, then review"
    )
