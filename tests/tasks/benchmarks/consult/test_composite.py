import pytest

from tasks.benchmarks.consult.composite import Composite, composite, stage_score
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
