"""Designed outcomes: branch shapes, and plans that cover every scenario even in small runs."""

import random
from collections import Counter

import pyarrow.parquet as pq

from tasks.synth.plans import draw_labels, plan_posts
from tasks.synth.timeline import WINDOW_END, WINDOW_START, post_times

SCENARIOS = {
    "thread",
    *(f"near_miss:{kind}" for kind in ("two_questions", "short_follow_up", "impostor", "non_physician_mid",
                                       "non_physician_top", "mid_tombstone", "physician_reply",
                                       "short_answer", "moderator_notice")),
    *(f"decoy:{kind}" for kind in ("deleted_author", "removed_selftext", "short_post", "image_only", "video",
                                   "removed_by_category", "gallery", "out_of_window")),
}  # fmt: skip


def test_labels_start_answered_and_only_eligible_shapes_are_all_answered_before_orphans():
    rng = random.Random(3)
    for _ in range(300):
        eligible, other = draw_labels(rng, True), draw_labels(rng, False)
        assert eligible[0] == other[0] == "A" and len(other) >= 3
        assert len(eligible.rstrip("O")) >= 3 and "O" not in eligible.rstrip("O")
        assert len(other.rstrip("O")) < 3 or "O" in other.rstrip("O")
    assert draw_labels(rng, True, pairs=7).startswith("A" * 7)


def test_window_edges_carry_threads_and_their_outer_neighbours_decoys():
    rng = random.Random(5)
    times = post_times(rng, 1000)
    plans = plan_posts(rng, times, 1000)
    first, last = times.index(WINDOW_START), times.index(WINDOW_END - 30)
    assert plans[first].scenario == plans[last].scenario == "thread"
    assert plans[first - 1].scenario == plans[last + 1].scenario == "decoy:out_of_window"


def test_small_runs_cover_every_scenario_and_length(subreddit_dump):
    threads = pq.read_table(subreddit_dump / "truth" / "threads.parquet").to_pylist()
    assert {thread["scenario"] for thread in threads} == SCENARIOS
    for column in ("n_questions", "n_pairs_answered"):  # short, medium and long strata, 5+ threads each
        lengths = Counter(min(6, max(3, thread[column])) for thread in threads if thread[column])
        assert lengths[3] >= 5 and lengths[4] + lengths[5] >= 5 and lengths[6] >= 5
