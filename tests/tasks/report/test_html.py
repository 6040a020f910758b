"""The self-contained page: placeholders filled in one pass, data safe inside <script>, figures inline."""

import base64
import json

from tasks.core.safe_text import visible_text
from tasks.report.html import (
    CHUNK_SEPARATOR,
    PACKED_DATA_TYPE,
    browser_parts,
    data_parts,
    figures_html,
    packed_json,
    render_page,
    script_json,
    seven_bit_bytes,
    seven_bit_text,
    unpack_json,
)
from tests.chromium import Page
from tests.tasks.benchmarks.threadmed.test_report_html import _chromium


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


def test_seven_bit_text_packs_bits_big_endian_and_escapes_what_a_script_element_would_alter():
    # 11111111 00000000 → 1111111 1000000 0000000 (padded): 127, 64 and 0, which is NUL, so escaped.
    assert seven_bit_text(b"\xff\x00") == "\x7f@\u0100"
    # 00011010 01111000 → 0001101 (CR, escaped) 0011110 0000000 (NUL, escaped).
    assert seven_bit_text(b"\x1a\x78") == "\u010d\x1e\u0100"


def test_seven_bit_text_round_trips_and_never_holds_nul_cr_or_lt():
    data = bytes(range(256)) * 7 + b"\x00\x0d<"
    text = seven_bit_text(data)
    assert not {"\x00", "\r", "<"} & set(text)
    assert seven_bit_bytes(text) == data


def test_packed_json_round_trips_and_is_smaller_than_json_for_text():
    value = {
        "turns": [[turn, 0.5, "ok", f"answer {turn} " * 40, None] for turn in range(200)],
        "é": "</script>",
    }
    packed = packed_json(value)
    assert unpack_json(packed) == [value]
    assert len(packed.encode()) < len(script_json(value).encode()) / 5


def test_chunks_are_packed_apart_after_the_value():
    packed = packed_json({"index": [0, 1]}, [["first"], ["second"]])
    assert packed.count(CHUNK_SEPARATOR) == 2
    assert packed.split(CHUNK_SEPARATOR)[2] == packed_json(["second"])
    assert unpack_json(packed) == [{"index": [0, 1]}, ["first"], ["second"]]


def test_data_parts_say_how_the_data_is_encoded():
    assert data_parts({"a": 1}, packed=False) == {"data": '{"a":1}', "data_type": "application/json"}
    assert data_parts({"a": 1}, [[2]]) == {
        "data": packed_json({"a": 1}, [[2]]),
        "data_type": PACKED_DATA_TYPE,
    }


def test_a_page_that_gives_no_data_type_gets_inline_json(tmp_path):
    template = tmp_path / "page.html"
    template.write_text('<script type="{{data_type}}">{{data}}</script>')
    assert render_page({"data": "[]"}, template) == '<script type="application/json">[]</script>'


def test_every_page_text_shows_invisible_characters_as_the_shared_rule_does(tmp_path):
    """A page of the shared template whose server-written meta and whose browser's script-written text (at
    load and later) hold a right-to-left override and zero-width characters: every text node shows their
    markers, as safe_text.visible_text does; the data script and a text area keep their text."""
    chromium = _chromium()
    spoof = "take \u202eyliad gm 05\u202c\u200b\ufeff"
    browser = (
        '<p id="now"></p><p id="later"></p><textarea id="kept"></textarea><script>'
        f'document.getElementById("now").textContent = {json.dumps(spoof)};'
        f'document.getElementById("kept").value = {json.dumps(spoof)};'
        "setTimeout(() => { const later = document.getElementById('later');"
        f" later.appendChild(document.createTextNode({json.dumps(spoof)}));"
        " document.body.dataset.ready = '1'; }, 50);</script>"
    )
    parts = {"title": spoof, "meta": spoof, "note": "", "tables": "", "figures": "", "style": ""}
    page_file = tmp_path / "index.html"
    page_file.write_text(render_page({**parts, "browser": browser, "data": script_json({"text": spoof})}))
    page = Page(chromium, page_file.as_uri(), tmp_path / "profile")
    try:
        page.wait_for("document.body && document.body.dataset.ready === '1'")
        shown = page.evaluate(
            "['now', 'later'].map(id => document.getElementById(id).textContent).concat(["
            " document.querySelector('.meta').textContent, document.title,"
            " document.getElementById('kept').value,"
            " JSON.parse(document.getElementById('report-data').textContent).text])"
        )
    finally:
        page.close()
    visible = visible_text(spoof)
    assert visible == "take ⟨U+202E⟩yliad gm 05⟨U+202C⟩⟨U+200B⟩⟨U+FEFF⟩"
    assert shown == [visible, visible, visible, visible, spoof, spoof]
