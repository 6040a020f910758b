"""How long a report page takes to open in headless Chromium, timed inside the page.

Chromium starts on about:blank; a script registered over the DevTools protocol (loopback only) before
each navigation records when the page's browser marks itself ready (`body[data-ready="1"]`, which every
report browser sets once it has rendered) and the first frame after that. The page opens when that
frame is drawn and the load event (figures decoded) has ended, counted from the navigation's start.
"""

import tempfile
from pathlib import Path
from typing import Any

from tests.chromium import Page

RECORD_READY = """(() => {
  const record = () => {
    if (window.__readyAt !== undefined || !document.body || document.body.dataset.ready !== "1") return;
    window.__readyAt = performance.now();
    requestAnimationFrame(() => setTimeout(() => { window.__paintedAt = performance.now(); }));
  };
  const watched = {subtree: true, attributes: true, attributeFilter: ["data-ready"]};
  new MutationObserver(record).observe(document, watched);
})();"""
TIMINGS = """(() => {
  const nav = performance.getEntriesByType("navigation")[0];
  return {file_read_ms: nav.responseEnd, parsed_ms: nav.domInteractive, load_ms: nav.loadEventEnd,
          ready_ms: window.__readyAt, painted_ms: window.__paintedAt,
          open_ms: Math.max(window.__paintedAt, nav.loadEventEnd)};
})()"""


def _open_once(page: Page, url: str) -> dict[str, float]:
    page.call("Page.navigate", {"url": "about:blank"})
    page.wait_for("location.href === 'about:blank'")
    page.call("Page.navigate", {"url": url})
    page.wait_for(
        "window.__paintedAt !== undefined && performance.getEntriesByType('navigation')[0].loadEventEnd > 0",
        timeout=120,
    )
    return page.evaluate(TIMINGS)


def time_page_open(chromium: str, html: Path, repeats: int = 3) -> dict[str, Any]:
    """Open `html` `repeats` times in one fresh browser: the slowest open's timings (ms since navigation
    start, the first open in a cold browser usually) and every open's time."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        page = Page(chromium, "about:blank", Path(profile))
        try:
            page.call("Page.enable", {})
            page.call("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_READY})
            runs = [_open_once(page, html.resolve().as_uri()) for _ in range(repeats)]
        finally:
            page.close()
    return {**max(runs, key=lambda run: run["open_ms"]), "runs_ms": [run["open_ms"] for run in runs]}
