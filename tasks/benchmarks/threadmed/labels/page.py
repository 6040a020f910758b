"""The rating page: rate.html (beside this module) filled with a sample's items and the run's rubric.

One self-contained file that works from file:// (inline styles, script and data; it loads nothing). It
is blinded: an item carries only its opaque id, its position and the texts a rater reads, never the
model, the condition, the run or the judge's grade. Ratings stay in the browser's localStorage under the
sample's id until the rater exports them as the CSV that `threadmed labels import` reads.
"""

import hashlib
import html
from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed.labels.folder import CLINICIAN, CSV_COLUMNS, GRADE_TEXTS
from tasks.benchmarks.threadmed.labels.sample import LabelSample
from tasks.core.safe_text import FORMULA_STARTS, PREFIXED_STARTS, TEXT_PREFIX
from tasks.report.html import render_page, script_json

TEMPLATE = Path(__file__).with_name("rate.html")
# What the page may know of an item: nothing that tells the model, the run or the judge's grade.
PAGE_FIELDS = ("item_id", "position", "context", "question", "physician_answer", "answer")


def sample_id(items: list[dict[str, Any]]) -> str:
    """The id of a sample's page: its items in page order. It keys the page's storage, so the ratings of
    two samples opened in one browser never mix."""
    return hashlib.sha256("\x1f".join(item["item_id"] for item in items).encode()).hexdigest()[:16]


def rubric_text(sample: LabelSample) -> str:
    """What the rater reads of the rubric: its instructions and grade definitions (the system section),
    without the user section's placeholders for the texts."""
    sections = sample.rubric.sections
    return sections.get("system") or "\n\n".join(sections.values())


def render_rating_page(sample: LabelSample) -> str:
    """The rate.html of `sample`, every text escaped for where it goes."""
    settings = {
        "sample_id": sample_id(sample.items),
        "columns": list(CSV_COLUMNS),
        "rater_kind": CLINICIAN,
        "grades": list(GRADE_TEXTS.values()),
        # The CSV's cells are neutralised as every CSV of the project (tasks/core/safe_text.py), and a rater
        # id is refused as `labels import` refuses it.
        "formula_starts": FORMULA_STARTS,
        "prefixed_starts": PREFIXED_STARTS,
        "text_prefix": TEXT_PREFIX,
    }
    return render_page(
        {
            "title": f"Rating round {settings['sample_id']}",
            "rubric_version": html.escape(sample.rubric.version),
            "rubric": html.escape(rubric_text(sample)),
            "settings": script_json(settings),
            "items": script_json([{key: item[key] for key in PAGE_FIELDS} for item in sample.items]),
        },
        TEMPLATE,
    )
