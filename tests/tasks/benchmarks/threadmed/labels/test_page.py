"""rate.html: blinded in its bytes, and used as a rater would in a real headless Chromium.

Needs Debian's `chromium`: skipped with a reason on a developer machine without it, a failure in CI.
"""

import csv
import functools
import io
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.labels.folder import read_items
from tasks.benchmarks.threadmed.labels.page import PAGE_FIELDS
from tasks.benchmarks.threadmed.labels.ratings import check_ratings
from tasks.benchmarks.threadmed.labels.sample import build_sample
from tasks.benchmarks.threadmed.labels.store import write_sample
from tasks.core.safe_text import INVISIBLE_MARKERS, visible_text
from tests.tasks.benchmarks.threadmed.labels.fixtures import (
    HOSTILE,
    MODELS,
    N_JUDGED,
    RUN_ID,
    SPOOF,
)
from tests.tasks.benchmarks.threadmed.test_report_html import Page, _chromium

NOTE = 'vague, "safe"\nbut misses the red flag <b>'


@pytest.fixture(scope="module")
def labels_dir(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    labels = tmp_path_factory.mktemp("labels-page") / "labels"
    write_sample(labels, build_sample(run_dir, 200, seed=5))
    return labels


class QuietFileHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No line on stderr per request."""


@pytest.fixture(scope="module")
def page_url(labels_dir: Path) -> Iterator[str]:
    """rate.html served on the loopback interface, not opened from file://.

    Chromium 156 now and then opens a reloaded file:// page on an empty localStorage, whose writes the
    next load does not see either (about once in 80 to 300 reloads with Chromium short of CPU, as often
    with location.reload() as with the DevTools reload, and with every write already reported applied
    by DOMStorage events); over http no reload of 700 did.
    """
    handler = functools.partial(QuietFileHandler, directory=str(labels_dir))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_port}/rate.html"
        finally:
            server.shutdown()


@pytest.fixture(scope="module")
def page(page_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    chromium = _chromium()
    browser = Page(chromium, page_url, tmp_path_factory.mktemp("profile"))
    try:
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        yield browser
    finally:
        browser.close()


def test_the_page_holds_no_model_run_or_judge_grade(labels_dir: Path) -> None:
    text = (labels_dir / "rate.html").read_text()
    for hidden in (*MODELS, RUN_ID, "overlap-judge", "judge_score", "stratum", "baseline", "thread_id"):
        assert hidden not in text
    items = json.loads(re.search(r'<script type="application/json" id="items">(.*?)</script>', text).group(1))
    assert len(items) == N_JUDGED
    assert {tuple(item) for item in items} == {PAGE_FIELDS}
    assert "<script>window.pwned" not in text  # answers cannot close the data's script element


def reload(page: Page) -> None:
    page.evaluate("window.beforeReload = true")
    page.call("Page.reload", {})
    page.wait_for("!window.beforeReload && document.body && document.body.dataset.ready === '1'")


def start_fresh(page: Page, rater: str | None = "dr-a") -> None:
    """A browser that has never seen this page, then (if given) the rater's id typed into its form."""
    page.evaluate("localStorage.clear()")
    reload(page)
    if rater is not None:
        type_rater(page, rater)


def type_rater(page: Page, rater: str) -> None:
    page.evaluate(
        f"document.getElementById('rater-input').value = {json.dumps(rater)};"
        "document.getElementById('rater-form').requestSubmit()"
    )


def press(page: Page, key: str) -> None:
    code = {"ArrowRight": 39, "ArrowLeft": 37}.get(key) or ord(key.upper())
    event = {"key": key, "windowsVirtualKeyCode": code}
    page.call("Input.dispatchKeyEvent", {"type": "keyDown", **event})
    page.call("Input.dispatchKeyEvent", {"type": "keyUp", **event})


def downloaded_text(path: Path, expected: str, timeout: float = 60) -> str | None:
    """What Chromium's download at `path` holds once it holds `expected`, or after `timeout` seconds (a guard
    against a hang, not a bound): the file can appear, empty, before its bytes are written."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text() if path.exists() else None
        if text == expected or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def shown(page: Page) -> dict:
    return page.evaluate(
        "({title: document.getElementById('item-title').textContent,"
        " progress: document.getElementById('progress').textContent,"
        " pressed: [...document.querySelectorAll('button.grade[aria-pressed=true]')]"
        "   .map(b => b.dataset.grade),"
        " note: document.getElementById('note').value})"
    )


def test_the_rater_is_asked_once(page: Page) -> None:
    start_fresh(page, rater=None)
    assert page.evaluate(
        "[document.getElementById('rater-form').hidden, document.getElementById('rating').hidden]"
    ) == [
        False,
        True,
    ]
    type_rater(page, "dr-a")
    reload(page)
    assert page.evaluate(
        "[document.getElementById('rater-form').hidden, document.getElementById('rating').hidden,"
        " document.getElementById('rater-name').textContent]"
    ) == [True, False, "dr-a"]


def test_a_clicked_grade_and_a_typed_note_survive_a_reload(page: Page) -> None:
    start_fresh(page)
    assert shown(page) == {
        "title": f"Item 1 of {N_JUDGED}",
        "progress": f"0 of {N_JUDGED} rated",
        "pressed": [],
        "note": "",
    }
    page.evaluate("document.querySelector('button.grade[data-grade=\"0.5\"]').click()")
    page.evaluate(
        f"const note = document.getElementById('note'); note.value = {json.dumps(NOTE)};"
        "note.dispatchEvent(new Event('input'))"
    )
    reload(page)
    assert shown(page) == {
        "title": f"Item 1 of {N_JUDGED}",
        "progress": f"1 of {N_JUDGED} rated",
        "pressed": ["0.5"],
        "note": NOTE,
    }


def test_two_raters_sharing_a_browser_keep_their_own_ratings(page: Page) -> None:
    start_fresh(page)
    press(page, "3")
    page.evaluate("document.getElementById('change-rater').click()")
    type_rater(page, "dr-b")
    assert (shown(page)["progress"], page.evaluate("window.ratingsCsv()")) == (
        f"0 of {N_JUDGED} rated",
        "item_id,rater,rater_kind,grade,note,rated_at\n",
    )
    page.evaluate("document.getElementById('change-rater').click()")
    type_rater(page, "dr-a")
    assert shown(page)["pressed"] == ["1"]


def test_keys_rate_and_move_and_are_shown(page: Page) -> None:
    start_fresh(page)
    assert "1 incorrect, 2 partially correct, 3 correct, j or → next, k or ← previous" in page.evaluate(
        "document.querySelector('.keys').textContent.replace(/\\s+/g, ' ')"
    )
    press(page, "3")
    press(page, "j")
    assert shown(page) == {
        "title": f"Item 2 of {N_JUDGED}",
        "progress": f"1 of {N_JUDGED} rated",
        "pressed": [],
        "note": "",
    }
    press(page, "1")
    press(page, "ArrowLeft")
    assert shown(page)["pressed"] == ["1"]
    press(page, "ArrowRight")
    assert shown(page) == {
        "title": f"Item 2 of {N_JUDGED}",
        "progress": f"2 of {N_JUDGED} rated",
        "pressed": ["0"],
        "note": "",
    }


def test_untrusted_text_stays_text(page: Page) -> None:
    start_fresh(page)
    position = page.evaluate(f"ITEMS.findIndex(item => item.question === {json.dumps(HOSTILE)})")
    for _ in range(position):
        press(page, "j")
    assert page.evaluate("document.getElementById('physician').textContent") == HOSTILE
    # The override and the zero-width space are shown as markers, not obeyed.
    assert page.evaluate("document.getElementById('answer').textContent") == (
        HOSTILE + " take ⟨U+202E⟩yliad gm 05⟨U+202C⟩⟨U+200B⟩ now"
    )
    assert page.evaluate("[window.pwned, document.querySelectorAll('main img').length]") == [None, 0]


def test_the_pages_visible_text_is_the_shared_rule(page: Page) -> None:
    """The page's visibleText is built from tasks/core/safe_text.py's markers: it shows every text as
    visible_text does, including a rater's id."""
    text = "a" + "b".join(INVISIBLE_MARKERS) + SPOOF
    assert page.evaluate(f"visibleText({json.dumps(text)})") == visible_text(text)
    start_fresh(page, rater="dr\u202ea\u200b")
    assert page.evaluate("document.getElementById('rater-name').textContent") == "dr⟨U+202E⟩a⟨U+200B⟩"


def test_a_rater_id_starting_a_formula_is_refused_and_cells_are_neutralised(
    page: Page, labels_dir: Path
) -> None:
    start_fresh(page, rater='=HYPERLINK("http://example.com")')
    assert page.evaluate(
        "[document.getElementById('rater-form').hidden, document.getElementById('rater-refused').hidden]"
    ) == [False, False]
    type_rater(page, "dr-a")
    press(page, "3")
    page.evaluate(
        "const note = document.getElementById('note'); note.value = '=1+2 misses the dose';"
        "note.dispatchEvent(new Event('input'))"
    )
    text = page.evaluate("window.ratingsCsv()")
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert (row["rater"], row["note"]) == ("dr-a", "'=1+2 misses the dose")
    item_ids = set(read_items(labels_dir)["item_id"].to_pylist())
    checked = check_ratings({Path("dr-a.csv"): text}, item_ids, set(), replace=False)
    assert [(r["rater"], r["note"]) for r in checked.rows] == [("dr-a", "=1+2 misses the dose")]


def test_the_export_is_the_csv_labels_import_takes(page: Page, labels_dir: Path, tmp_path: Path) -> None:
    start_fresh(page)
    page.evaluate("document.querySelector('button.grade[data-grade=\"1\"]').click()")
    page.evaluate(
        f"const note = document.getElementById('note'); note.value = {json.dumps(NOTE)};"
        "note.dispatchEvent(new Event('input'))"
    )
    press(page, "j")
    press(page, "j")
    press(page, "2")
    page.call("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    page.evaluate("document.getElementById('export').click()")
    downloaded = tmp_path / page.evaluate("document.getElementById('download').download")
    shown_csv = page.evaluate("window.ratingsCsv()")
    text = downloaded_text(downloaded, shown_csv)
    assert text == shown_csv
    item_ids = read_items(labels_dir)["item_id"].to_pylist()
    rows = list(csv.reader(io.StringIO(text)))
    assert [row[:5] for row in rows] == [
        ["item_id", "rater", "rater_kind", "grade", "note", "rated_at"][:5],
        [item_ids[0], "dr-a", "clinician", "1", NOTE],
        [item_ids[2], "dr-a", "clinician", "0.5", ""],
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row[5]) for row in rows[1:])
    checked = check_ratings({downloaded: text}, set(item_ids), set(), replace=False)
    assert (checked.errors, [row["grade"] for row in checked.rows]) == ([], [1.0, 0.5])


def test_the_page_rates_and_exports_opened_from_a_file(
    labels_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # As a rater opens it: from disk, no server. (Reloads are tested over http: see `page_url`.)
    browser = Page(_chromium(), (labels_dir / "rate.html").as_uri(), tmp_path_factory.mktemp("file-profile"))
    try:
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        type_rater(browser, "dr-file")
        press(browser, "3")
        rows = list(csv.DictReader(io.StringIO(browser.evaluate("window.ratingsCsv()"))))
    finally:
        browser.close()
    first = read_items(labels_dir).sort_by("position")["item_id"][0].as_py()
    assert [(row["item_id"], row["rater"], row["grade"]) for row in rows] == [(first, "dr-file", "1")]
