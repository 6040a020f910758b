"""Post times: the requested count inside the window, some outside every month, edges pinned."""

import random

from tasks.synth.timeline import MONTHS, WINDOW_END, WINDOW_START, month_label, month_of, post_times


def test_posts_fill_the_window_and_every_month_outside_it():
    times = post_times(random.Random(4), 500)
    inside = [t for t in times if WINDOW_START <= t < WINDOW_END]
    assert times == sorted(times) and len(inside) == 500
    assert {WINDOW_START - 1, WINDOW_START, WINDOW_END - 30, WINDOW_END} <= set(times)
    outside = {month_label(month_of(t)) for t in times if not WINDOW_START <= t < WINDOW_END}
    assert {"2014-01", "2014-12", "2023-07", "2023-12"} <= outside and len(outside) == 18


def test_months_run_from_january_2014_to_january_2024():
    assert (month_label(0), month_label(MONTHS - 1)) == ("2014-01", "2024-01")
