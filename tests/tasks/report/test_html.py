"""The self-contained page: placeholders filled in one pass, data safe inside <script>, figures inline."""

import base64
import json

from tasks.report.html import browser_parts, figures_html, render_page, script_json


def test_script_json_cannot_close_its_script_element():
    text = script_json({"reply": "</script><!-- é"})
    assert "<" not in text
    assert json.loads(text) == {"reply": "</script><!-- é"}


def test_figures_are_data_uris_with_escaped_captions():
    png = b"\x89PNG"
    rendered = figures_html({"fig_a": png}, {"fig_a": "A < B"})
    uri = f"data:image/png;base64,{base64.b64encode(png).decode()}"
    assert rendered == (
        f'<figure id="fig_a"><img alt="A &lt; B" src="{uri}"><figcaption>A &lt; B</figcaption></figure>'
    )


def test_placeholders_are_filled_once_never_rescanned(tmp_path):
    template = tmp_path / "page.html"
    template.write_text("<h1>{{title}}</h1>{{body}}")
    assert render_page({"title": "{{body}}", "body": "x"}, template) == "<h1>{{body}}</h1>x"


def test_a_benchmarks_browser_fills_the_browser_and_style_parts(tmp_path):
    (tmp_path / "browser.html").write_text("<form></form><script>go()</script>")
    (tmp_path / "browser.css").write_text(".hit { color: green; }")
    assert browser_parts(tmp_path) == {
        "browser": "<form></form><script>go()</script>",
        "style": ".hit { color: green; }",
    }
