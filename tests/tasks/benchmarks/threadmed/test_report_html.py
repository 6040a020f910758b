"""index.html in a real headless Chromium, driven over the DevTools protocol (loopback only).

Needs Debian's `chromium`: skipped with a reason on a developer machine without it, a failure in CI.
"""

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tasks.benchmarks.threadmed import browser as threadmed_browser
from tasks.benchmarks.threadmed.report import ReportSettings, build_report
from tasks.report.html import unpack_json
from tests.chromium import Page  # also imported from here by the SNOMED and consultation page tests
from tests.perf.bench_report import write_dataset, write_run

MODELS = ("alpha", "beta")
N_THREADS = 12
HOSTILE = '<img src=x onerror="window.pwned = 1"></script><script>window.pwned = 2</script>'
# A right-to-left override and a zero-width space: shown as written, "gm 05" would read "50 mg".
SPOOF = " take \u202eyliad gm 05\u202c\u200b"


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed; CI must install it (apt-get install -y chromium)")
    pytest.skip("chromium is not installed (apt-get install -y chromium); CI runs this test")


def _run_rows() -> tuple[list[dict], list[dict], list[dict]]:
    """12 threads of 3 turns for 2 models x 2 conditions (oracle from turn 1): 48 conversations.

    Scores cycle over wrong, partial, correct; the last turn of every beta/baseline thread is
    unparseable; thread t00's texts are hostile markup; thread t01's physician answers end in SPOOF.
    """
    qa_pairs, responses, judgments = [], [], []
    for thread in range(N_THREADS):
        thread_id = f"t{thread:02d}"
        text = HOSTILE if thread == 0 else f"question {thread_id}"
        for turn in range(3):
            answer = HOSTILE if thread == 0 else f"physician answer {thread_id} turn {turn}"
            answer += SPOOF if thread == 1 else ""
            qa_pairs.append({"thread_id": thread_id, "turn": turn, "question": text, "answer": answer})
    for model in MODELS:
        for condition, first_turn in (("baseline", 0), ("oracle", 1)):
            for thread in range(N_THREADS):
                for turn in range(first_turn, 3):
                    thread_id = f"t{thread:02d}"
                    key = {"run_id": "r1", "model": model, "condition": condition, "thread_id": thread_id}
                    key["turn"] = turn
                    response = HOSTILE if thread == 0 else f"{model} answer t{thread:02d} turn {turn}"
                    responses.append({**key, "status": "ok", "response": response})
                    unparseable = model == "beta" and condition == "baseline" and turn == 2
                    score = None if unparseable else [0.0, 0.5, 1.0][(thread + turn) % 3]
                    judgments.append(
                        {
                            **key,
                            "score": score,
                            "parse_status": "unparseable" if unparseable else "ok",
                            "reason": HOSTILE if thread == 0 else "judge reason",
                        }
                    )
    return qa_pairs, responses, judgments


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    chromium = _chromium()
    root = tmp_path_factory.mktemp("html")
    qa_pairs, responses, judgments = _run_rows()
    funnel = [
        {"stage_order": 0, "stage": "posts", "reason": None, "count_rows": 1000},
        {"stage_order": 1, "stage": "threads", "reason": None, "count_rows": N_THREADS},
    ]
    dataset = write_dataset(root / "build", qa_pairs, funnel)
    manifest = {
        "run_id": "r1",
        "dataset": {"path": str(dataset), "fingerprint": "f1"},
        "judge": {"model": "openai/gpt-4o"},
        "models": list(MODELS),
        "conditions": ["baseline", "oracle"],
    }
    run_dir = write_run(root / "run", manifest, responses, judgments)
    with pytest.MonkeyPatch.context() as patch:
        # 48 conversations in chunks of 5: the later pages' answers come from later chunks.
        patch.setattr(threadmed_browser, "CONVERSATIONS_PER_CHUNK", 5)
        report_dir = build_report.fn(
            run_dirs=[str(run_dir)], out_dir=str(root / "report"), settings=ReportSettings(n_resamples=200)
        )
    browser = Page(chromium, (Path(report_dir) / "index.html").as_uri(), root / "profile")
    try:
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        yield browser
    finally:
        browser.close()


def _select(page: Page, control: str, value: str) -> None:
    page.evaluate(
        f"(() => {{ const c = document.getElementById({json.dumps(control)}); c.value = {json.dumps(value)};"
        " c.dispatchEvent(new Event('input')); })()"
    )


def _shown(page: Page) -> list[dict[str, Any]]:
    """The conversations on the current page with their data attributes and turn-chip states."""
    return page.evaluate(
        "[...document.querySelectorAll('#conversations details.conversation')].map(d => ({"
        " model: d.dataset.model, condition: d.dataset.condition, thread: d.dataset.thread,"
        " matching: [...d.querySelectorAll('.chip.match')].map(c => c.textContent)}))"
    )


def _reset(page: Page) -> None:
    for control in ("filter-model", "filter-condition", "filter-score", "filter-turn", "filter-thread"):
        _select(page, control, "")


def test_tables_and_figures_are_visible(page: Page) -> None:
    tables = page.evaluate(
        "[...document.querySelectorAll('#tables table')].map(t => t.getBoundingClientRect().height)"
    )
    figures = page.evaluate(
        "[...document.querySelectorAll('#figures img')].map(i => i.complete && i.naturalWidth > 0)"
    )
    assert len(tables) >= 8 and all(height > 0 for height in tables)
    assert figures == [True, True, True]
    assert "Overall performance" in page.evaluate("document.getElementById('table-overall').innerText")


def test_a_conversation_opens_on_its_turns(page: Page) -> None:
    _reset(page)
    _select(page, "filter-thread", "t05")
    _select(page, "filter-model", "0")
    _select(page, "filter-condition", "0")
    assert page.evaluate("document.querySelectorAll('.turn').length") == 0  # turns render on opening only
    page.evaluate("document.querySelector('details.conversation').open = true")
    page.wait_for("document.querySelectorAll('.turn').length === 3")
    text = page.evaluate("document.querySelector('details.conversation').innerText")
    for expected in (
        "question t05",
        "physician answer t05 turn 1",
        "alpha answer t05 turn 2",
        "judge reason",
    ):
        assert expected in text
    assert (
        page.evaluate("document.querySelector('details.conversation').getBoundingClientRect().height") > 100
    )


def test_filters_and_pages(page: Page) -> None:
    _reset(page)
    assert (
        page.evaluate("document.getElementById('match-count').textContent") == "48 of 48 conversations match"
    )
    assert len(_shown(page)) == 20
    page.evaluate("document.getElementById('page-next').click()")
    assert len(_shown(page)) == 20 and "page 2 of 3" in page.evaluate("document.body.innerText")

    _select(page, "filter-model", "1")
    _select(page, "filter-condition", "0")
    shown = _shown(page)
    assert len(shown) == N_THREADS and {(c["model"], c["condition"]) for c in shown} == {("beta", "baseline")}

    _select(page, "filter-score", "none")
    shown = _shown(page)
    assert len(shown) == N_THREADS and all(c["matching"] == ["T2 unparseable"] for c in shown)

    # Score and turn must hold for the same turn: wrong at turn 1 means (thread + 1) % 3 == 0.
    _reset(page)
    _select(page, "filter-model", "0")
    _select(page, "filter-condition", "0")
    _select(page, "filter-score", "0")
    _select(page, "filter-turn", "1")
    shown = _shown(page)
    assert sorted(c["thread"] for c in shown) == [f"t{t:02d}" for t in range(N_THREADS) if (t + 1) % 3 == 0]
    assert all(c["matching"] == ["T1 0.0"] for c in shown)


def test_untrusted_text_stays_text(page: Page) -> None:
    _reset(page)
    _select(page, "filter-thread", "t00")
    page.evaluate("document.querySelectorAll('details.conversation').forEach(d => { d.open = true; })")
    page.wait_for("document.querySelectorAll('.turn').length > 0")
    assert page.evaluate(
        "window.pwned === undefined && document.querySelectorAll('#browser img').length === 0"
    )
    assert HOSTILE in page.evaluate("document.getElementById('conversations').innerText")


def test_bidirectional_and_zero_width_characters_are_shown_as_markers(page: Page) -> None:
    _reset(page)
    _select(page, "filter-thread", "t01")
    _select(page, "filter-model", "0")
    _select(page, "filter-condition", "0")
    page.evaluate("document.querySelector('details.conversation').open = true")
    page.wait_for("document.querySelectorAll('.turn').length === 3")
    text = page.evaluate("document.querySelector('details.conversation').textContent")
    assert "physician answer t01 turn 0 take ⟨U+202E⟩yliad gm 05⟨U+202C⟩⟨U+200B⟩" in text
    assert not {"\u202e", "\u202c", "\u200b"} & set(text)


def test_the_browser_decodes_the_packed_data_as_python_does(page: Page) -> None:
    payload = page.evaluate("document.getElementById('report-data').textContent")
    index, *chunks = unpack_json(payload)
    assert page.evaluate("reportData()") == index
    assert page.evaluate(f"Promise.all([...Array({len(chunks)}).keys()].map(reportChunk))") == chunks


def test_a_conversation_of_a_later_chunk_opens_on_its_answers(page: Page) -> None:
    _reset(page)
    _select(page, "filter-thread", "t11")
    _select(page, "filter-model", "1")
    _select(page, "filter-condition", "1")  # beta, oracle, t11: the 48th and last conversation, chunk 9
    page.evaluate("document.querySelector('details.conversation').open = true")
    page.wait_for("document.querySelectorAll('.turn').length === 2")
    text = page.evaluate("document.querySelector('details.conversation').innerText")
    assert "beta answer t11 turn 1" in text and "beta answer t11 turn 2" in text
