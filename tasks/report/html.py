"""The self-contained report page: template.html filled with tables, figures, inline data and the
benchmark's own conversation browser (its browser.html and browser.css)."""

import base64
import html
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).with_name("template.html")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: '<' is escaped, so no text can close it or open a comment."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def figures_html(figures: Mapping[str, bytes], captions: Mapping[str, str]) -> str:
    """Each PNG (by figure id) as a captioned <figure> holding a data URI, in the given order."""
    return "".join(
        f'<figure id="{name}"><img alt="{html.escape(captions[name])}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"><figcaption>'
        f"{html.escape(captions[name])}</figcaption></figure>"
        for name, png in figures.items()
    )


def render_page(parts: Mapping[str, str], template: Path = TEMPLATE) -> str:
    """The template with every {{name}} replaced by parts[name], already escaped by the caller."""
    # One pass, so text inserted for one placeholder is never scanned for another.
    return re.sub(r"\{\{(\w+)\}\}", lambda match: parts[match.group(1)], template.read_text())


def browser_parts(folder: Path) -> dict[str, str]:
    """The page parts of a benchmark's conversation browser: its markup and script, and its styles."""
    return {"browser": (folder / "browser.html").read_text(), "style": (folder / "browser.css").read_text()}
