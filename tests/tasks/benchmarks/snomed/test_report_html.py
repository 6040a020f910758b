"""The SNOMED report page in a real headless Chromium (loopback DevTools only): the interview browser
marks hits, malformed and missed codes and highlights leaking replies. Chromium as in ThReadMed's test."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.benchmarks.snomed.report import ReportSettings, build_report
from tests.tasks.benchmarks.snomed.test_report import BRONCHITIS, MADE_UP, SINUSITIS, make_run
from tests.tasks.benchmarks.threadmed.test_report_html import Page, _chromium


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    chromium = _chromium()
    root = tmp_path_factory.mktemp("snomed-html")
    runs = [str(make_run(root, "r1", ["alpha"])), str(make_run(root, "r2", ["beta"]))]
    report_dir = build_report.fn(
        run_dirs=runs, out_dir=str(root / "report"), settings=ReportSettings(n_resamples=50)
    )
    browser = Page(chromium, (Path(report_dir) / "index.html").as_uri(), root / "profile")
    try:
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        yield browser
    finally:
        browser.close()


def _pick(page: Page, control: str, value: str) -> None:
    page.evaluate(
        f"(() => {{ const c = document.getElementById({json.dumps(control)}); c.value = {json.dumps(value)};"
        " c.dispatchEvent(new Event('input')); })()"
    )


def _codes(page: Page, kind: str) -> list[str]:
    return page.evaluate(f"[...document.querySelectorAll('#interview .code-{kind}')].map(n => n.textContent)")


def test_an_interview_shows_its_codes_and_leaks(page: Page) -> None:
    _pick(page, "pick-model", "0")
    _pick(page, "pick-case", "0")
    assert page.evaluate("[...document.getElementById('pick-case').options].map(o => o.text)") == [
        "c1 · F1 0.50 · leak",
        "c2 · F1 1.00",
        "c3 · F1 —",
    ]
    assert _codes(page, "hit") == [f"{SINUSITIS} Viral sinusitis (disorder)"]
    assert _codes(page, "malformed") == [MADE_UP]
    assert _codes(page, "missed") == [f"{BRONCHITIS} Acute bronchitis (disorder)"]
    assert page.evaluate("document.querySelectorAll('#interview .message').length") == 6
    leak = page.evaluate("document.querySelector('#interview .message.leak').innerText")
    assert "Reply 2" in leak and f"Leaked: {BRONCHITIS} Acute bronchitis (disorder)" in leak


def test_a_failed_interview_says_so(page: Page) -> None:
    _pick(page, "pick-model", "0")
    _pick(page, "pick-case", "2")
    assert page.evaluate("document.getElementById('interview').dataset.status") == "failed"
    assert "rate limited" in page.evaluate("document.getElementById('interview').innerText")
    assert page.evaluate("document.querySelectorAll('#interview .message.failed').length") == 1
