import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tasks.benchmarks.consult.composite import (
    LOWER_IS_BETTER,
    Composite,
    composite,
    composite_scores,
    episodes_composite,
    metric_means,
    stage_score,
)
from tasks.benchmarks.consult.contracts import PRIMARY_METRICS, TREATMENT_METRICS

VALUES = {
    "mni_comp": 0.8,
    "cprw": 0.4,  # -> 0.6
    "ige": 0.5,
    "hit_at_1": 0.3,
    "povr": None,  # no applicable pair: left out
    "core_dx_recall": 1.0,
    "core_dx_f1": 0.5,
    "swds": 0.75,
    "psc": 1.0,
    "ddiv": 0.25,  # -> 0.75
    "pcr": 0.5,  # -> 0.5
    "fqr": 0.5,
    "dcsr": 0.0,
}


def test_each_metric_higher_better_averaged_by_stage_then_over_the_four_stages():
    history = (0.8 + 0.6 + 0.5 + 0.3) / 4
    diagnosis = (1.0 + 0.5 + 0.75) / 3
    treatment = (1.0 + 0.75 + 0.5) / 3
    follow_up = (0.5 + 0.0) / 2
    assert composite(VALUES) == pytest.approx(
        Composite(history, diagnosis, treatment, follow_up, (history + diagnosis + treatment + follow_up) / 4)
    )


def test_a_stage_with_no_defined_metric_leaves_the_composite_undefined():
    values = {**VALUES, "fqr": None, "dcsr": None}
    result = composite(values)
    assert (result.follow_up, result.score) == (None, None)
    assert result.treatment == pytest.approx(0.75)


def test_no_fqr_grade_read_leaves_the_follow_up_stage_undefined_never_dcsr_alone():
    # Every judge reply unreadable: the stage is not scored 1 from DCSR alone, and the composite cannot rise.
    values = {**VALUES, "fqr": None, "dcsr": 1.0}
    assert (composite(values).follow_up, composite(values).score) == (None, None)
    assert composite({**VALUES, "fqr": 0.0, "dcsr": None}).follow_up == 0.0  # no constraint: FQR alone


def test_lower_is_better_metrics_are_mapped_to_one_minus_x():
    assert stage_score({"psc": 0.0, "ddiv": 1.0, "pcr": 1.0}, TREATMENT_METRICS) == 0.0
    assert stage_score(dict.fromkeys(PRIMARY_METRICS, None), TREATMENT_METRICS) is None


# Two completed episodes and a failed one. DDIV is undefined in e1 (no drug pair) and POVR in e2 (no
# applicable pair), so each weighs in its stage differently over the set than in either episode alone.
EPISODES = [
    {**VALUES, "status": "completed", "povr": 0.5, "ddiv": None},
    {**VALUES, "status": "completed", "mni_comp": 0.4, "psc": 0.0, "ddiv": 0.5, "pcr": 0.0},
    {**dict.fromkeys(PRIMARY_METRICS, None), "status": "failed"},
]


def test_the_composite_of_episodes_averages_each_metric_over_them_then_the_stages():
    # Means: MNI-Comp .6, CPRw .4, IGE .5, Hit@1 .3, POVR .5 (e1 only); recall 1, F1 .5, SWDS .75;
    # PSC .5, DDIV .5 (e2 only), PCR .25; FQR .5, DCSR 0.
    history = (0.6 + 0.6 + 0.5 + 0.3 + 0.5) / 5
    diagnosis = (1.0 + 0.5 + 0.75) / 3
    treatment = (0.5 + 0.5 + 0.75) / 3
    follow_up = 0.25
    expected = Composite(
        history, diagnosis, treatment, follow_up, (history + diagnosis + treatment + 0.25) / 4
    )
    assert episodes_composite(EPISODES) == pytest.approx(expected)
    assert metric_means(EPISODES)["ddiv"] == 0.5 and metric_means(EPISODES)["povr"] == 0.5
    # Not the mean of the episodes' own composites (what the summary, leaderboard, Inspect log and compare
    # showed before): e1's is (.54 + .75 + .75 + .25) / 4 = .5725, e2's (.45 + .75 + .5 + .25) / 4 = .4875.
    own = [composite(episode).score for episode in EPISODES[:2]]
    assert own == pytest.approx([0.5725, 0.4875])
    assert episodes_composite(EPISODES).score == pytest.approx(0.5208333333) != sum(own) / 2


def test_composite_scores_of_an_array_are_the_composite_of_each_row():
    rows = [VALUES, {**VALUES, "fqr": None}, dict.fromkeys(PRIMARY_METRICS, None)]
    means = np.array(
        [[np.nan if row[name] is None else row[name] for name in PRIMARY_METRICS] for row in rows]
    )
    scores = composite_scores(means)
    assert scores.shape == (3, 5)
    assert [[None if np.isnan(v) else float(v) for v in row] for row in scores] == [
        list(composite(row)) for row in rows
    ]


METRIC = st.one_of(st.none(), st.floats(0, 1, allow_nan=False))
EPISODE = st.fixed_dictionaries(
    {name: METRIC for name in PRIMARY_METRICS},
    optional={"status": st.sampled_from(["completed", "failed"])},
).map(lambda episode: {"status": "completed", **episode})


@given(st.lists(EPISODE, max_size=8), st.randoms())
def test_the_composite_of_episodes_is_total_bounded_and_the_same_in_any_order(episodes, random):
    result = episodes_composite(episodes)
    assert all(score is None or 0 <= score <= 1 for score in result)
    assert (result.score is None) == any(stage is None for stage in result[:4])
    shuffled = random.sample(episodes, len(episodes))
    assert episodes_composite(shuffled) == result  # exactly: means are summed exactly
    assert episodes_composite(episodes * 2) == result  # each episode counts once per appearance
    failed = {**dict.fromkeys(PRIMARY_METRICS, 1.0), "status": "failed"}
    assert episodes_composite([*episodes, failed]) == result  # a failed episode is in no metric


@given(EPISODE.map(lambda episode: {**episode, "status": "completed"}))
def test_the_composite_of_one_episode_is_its_own(episode):
    assert episodes_composite([episode]) == composite(episode)


@given(st.lists(EPISODE, min_size=1, max_size=6), st.data())
def test_a_better_metric_never_lowers_a_stage_or_the_composite(episodes, data):
    defined = [
        (i, name)
        for i, episode in enumerate(episodes)
        for name in PRIMARY_METRICS
        if episode[name] is not None
    ]
    assume(defined)
    index, name = data.draw(st.sampled_from(defined))
    value = episodes[index][name]
    better = data.draw(st.floats(0, value) if name in LOWER_IS_BETTER else st.floats(value, 1))
    improved = [*episodes[:index], {**episodes[index], name: better}, *episodes[index + 1 :]]
    before, after = episodes_composite(episodes), episodes_composite(improved)
    for old, new in zip(before, after, strict=True):
        assert (old is None) == (new is None)
        assert old is None or new >= old
