"""The consultation report page in a real headless Chromium (loopback DevTools only): the episode browser
shows each question's template and revealed AIUs (MNI ones highlighted, deflections marked), the
differential against gold, the plan with each violation and its KB entry, and the follow-ups."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.benchmarks.consult.report import build_report
from tasks.benchmarks.consult.report_metrics import ReportSettings
from tests.tasks.benchmarks.consult.report_fixtures import PARSE_ERROR, make_run
from tests.tasks.benchmarks.threadmed.test_report_html import Page, _chromium


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    chromium = _chromium()
    root = tmp_path_factory.mktemp("consult-html")
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


def _texts(page: Page, selector: str) -> list[str]:
    return page.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})].map(n => n.textContent)")


def test_an_episode_shows_questions_reveals_and_the_differential(page: Page) -> None:
    _pick(page, "pick-model", "0")
    _pick(page, "pick-case", "0")
    assert _texts(page, "#pick-case option") == ["c1 · respiratory", "c2 · respiratory", "c3 · ent · failed"]
    assert _texts(page, "#episode .aiu.mni") == ["a1"]
    assert _texts(page, "#episode .aiu") == ["a1", "x1"]
    assert _texts(page, "#episode .message h4") == [
        "history · turn 0 · patient · simulated",
        "history · turn 1 · agent",
        "history · turn 1 · patient · simulated · template t1",
        "history · turn 2 · agent",
        "history · turn 2 · patient · simulated · template t2 · deflected",
        "diagnosis · turn 3 · agent",
    ]
    assert page.evaluate("document.querySelectorAll('#episode .message.deflected').length") == 1
    assert _texts(page, "#episode .code-hit") == ["1. Acute bronchitis (core) → bronchitis"]
    assert _texts(page, "#episode .code-unmatched") == ["2. Flu-ish"]
    assert _texts(page, "#episode .code-missed") == ["Pneumonia (non-core, severity 3)"]


def test_a_failed_episode_says_so(page: Page) -> None:
    _pick(page, "pick-model", "0")
    _pick(page, "pick-case", "2")
    assert page.evaluate("document.getElementById('episode').dataset.status") == "failed"
    assert "rate limited" in page.evaluate("document.getElementById('episode').innerText")
    assert page.evaluate("document.querySelectorAll('#episode .message.failed').length") == 1


def test_an_episode_shows_its_plan_each_violation_with_its_kb_entry_and_the_follow_ups(page: Page) -> None:
    _pick(page, "pick-model", "0")
    _pick(page, "pick-case", "0")
    assert _texts(page, "#episode .plan-block > strong") == ["Plan: ", "Revised plan: "]
    assert _texts(page, "#episode .plan td")[:8] == [
        "Amoxil", "amoxicillin", "500", "mg", "3", "5", "oral", "yes"
    ]  # fmt: skip
    assert _texts(page, "#episode .violation") == [
        "hard · allergy · amoxicillin: the patient is allergic to penicillins "
        "[drug amoxicillin: allergy_class penicillins] BNF"
    ]
    assert _texts(page, "#episode .follow-up h4") == ["follow-up 1 · constraint · no_tablets · core"]
    assert _texts(page, "#episode .follow-up .answer") == ["Agent: Take the liquid instead."]
    assert _texts(page, "#episode .follow-up .verdict-correct") == ["correct"]
    assert "Drugs in force: amoxicillin" in page.evaluate(
        "document.querySelector('#episode .follow-up').innerText"
    )


def test_a_plan_item_the_critic_could_not_check_is_marked_unverified(page: Page) -> None:
    _pick(page, "pick-model", "1")
    _pick(page, "pick-case", "0")
    assert _texts(page, "#episode .plan tr.unverified td") == [
        "Elixir of vigour", "—", "500", "mg", "3", "5", "oral", "unverified"
    ]  # fmt: skip
    assert _texts(page, "#episode .violation.unverified") == [
        "unverified · unverified · Elixir of vigour: 'Elixir of vigour' matches no drug of the knowledge "
        "base [drugs_v1: no match] consultation KB v1"
    ]


def test_an_episode_whose_plan_did_not_parse_says_so_and_shows_no_plan_or_verdict_of_the_critic(
    page: Page,
) -> None:
    _pick(page, "pick-model", "1")
    _pick(page, "pick-case", "1")
    assert _texts(page, "#episode .plan-block") == []
    assert _texts(page, "#episode .violations") == []
    meta = _texts(page, "#episode > p.meta")
    assert " · plan unparseable · 1 revision(s) unparseable" in meta[0]
    assert meta[1:3] == [
        f"Parser error (scored as unparseable): {PARSE_ERROR}",
        "MNI target: b1",
    ]
    assert "Plan did not parse: scored the worst, the critic checked nothing." in meta
    follow_up = page.evaluate("document.querySelector('#episode .follow-up').innerText")
    assert [line for line in follow_up.splitlines() if line][-3:] == [
        "Revision did not parse: no plan in force can be read.",
        "Drugs in force: unread (the critic checked nothing).",
        "Verdict: incorrect · no plan can be read",
    ]


def test_an_episode_with_an_empty_plan_shows_it_and_the_critics_verdict(page: Page) -> None:
    _pick(page, "pick-model", "1")
    _pick(page, "pick-case", "2")
    assert _texts(page, "#episode .plan-block") == ["Plan: no drug"]
    assert _texts(page, "#episode .violations") == ["Critic: no violation."]


def test_every_table_fits_a_1280_px_window_without_scrolling(page: Page) -> None:
    # Chromium's window is 1280 px wide (tests/chromium.py); the widest tables are history (with the
    # empirical reference row) and by department.
    widths = page.evaluate(
        "[...document.querySelectorAll('.table-block')].map(b => [b.id, b.scrollWidth <= b.clientWidth"
        " && b.querySelector('table').getBoundingClientRect().right <= window.innerWidth])"
    )
    assert [block for block, fits in widths if not fits] == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
