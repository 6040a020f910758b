from pathlib import Path

import pytest

from tasks.benchmarks.consult.inquiry.corpora import read_corpora
from tasks.benchmarks.consult.inquiry.mining import (
    MiningSettings,
    empirical_reference,
    mine,
    mine_inquiry,
    partial_orders,
    precedence_counts,
    render_outputs,
)
from tasks.benchmarks.consult.inquiry.policy import PartialOrder, load_policy
from tasks.benchmarks.consult.inquiry.templates import TEMPLATE_IDS, TemplateSpace, load_catalogue
from tests.tasks.benchmarks.consult.inquiry.fixtures import write_aci_csv

SHIPPED_CORPORA = Path(__file__).parents[5].parent / "shared" / "data" / "dialogues"
TINY = MiningSettings(k=4, min_dialogues=1, min_support=2, smoothing=0.1)


@pytest.fixture(scope="module")
def space():
    return TemplateSpace(load_catalogue())


def test_tiny_corpus_gives_known_templates_sequences_and_transitions(tmp_path, space):
    write_aci_csv(tmp_path)
    mined = mine(read_corpora(tmp_path), space, TINY)
    assert sorted((c.template_id, c.size) for c in mined.clusters) == [
        ("chief_complaint", 3),
        ("medications", 3),
        ("onset_duration", 3),
        ("social_history", 2),
    ]
    assert mined.sequences == {
        "aci-bench/D1": ["chief_complaint", "onset_duration", "medications", "social_history"],
        "aci-bench/D2": ["chief_complaint", "onset_duration", "social_history", "medications"],
        "aci-bench/D3": ["chief_complaint", "medications", "onset_duration"],
    }
    policy = mined.policy
    # 26 templates + END = 27 columns; chief_complaint -> onset 2 of 3, -> medications 1 of 3.
    assert policy.probability("chief_complaint", "onset_duration") == pytest.approx(2.1 / 5.7)
    assert policy.probability("chief_complaint", "medications") == pytest.approx(1.1 / 5.7)
    assert policy.probability(None, "chief_complaint") == pytest.approx(3.1 / 5.7)
    assert policy.probability("medications", None) == pytest.approx(1.1 / 5.7)
    assert policy.probability("skin", "cardiac") == pytest.approx(1 / 27)
    # Second after START is a tie at 0 between templates asked 3 times (onset, medications): by id.
    assert policy.top_k_next(None, k=2) == ["chief_complaint", "medications"]
    assert policy.top_k_next("chief_complaint") == ["onset_duration", "medications", "chief_complaint"]
    assert policy.greedy_sequence(4) == ["chief_complaint", "onset_duration", "medications", "social_history"]
    # Support 2 is enough here: chief_complaint precedes all; onset precedes smoking 2 of 2.
    assert policy.partial_orders == [
        PartialOrder("chief_complaint", "onset_duration", 3, 1.0),
        PartialOrder("chief_complaint", "medications", 3, 1.0),
        PartialOrder("chief_complaint", "social_history", 2, 1.0),
        PartialOrder("onset_duration", "social_history", 2, 1.0),
    ]


def test_partial_orders_at_exactly_the_share_and_under_the_support():
    a, b, c = "chief_complaint", "onset_duration", "allergies"
    sequences = [[a, b], [a, b], [a, b], [a, b, c], [b, a, c]]
    # a before b in 4 of 5 = exactly 80%: kept. a-c and b-c: support 2 < 5: dropped.
    assert partial_orders(precedence_counts(sequences, TEMPLATE_IDS), share=0.8, min_support=5) == [
        PartialOrder(a, b, 5, 0.8)
    ]
    assert partial_orders(precedence_counts(sequences, TEMPLATE_IDS), share=0.81, min_support=5) == []


def test_empirical_reference_of_identical_dialogues_is_perfect():
    sequence = ["chief_complaint", "onset_duration", "medications"]
    reference = empirical_reference(
        {f"d{i}": sequence for i in range(3)}, TEMPLATE_IDS, MiningSettings(min_support=2)
    )
    assert reference == {
        "method": "leave-one-out over dialogue sequences",
        "k": 3,
        "dialogues": 3,
        "turns": 9,
        "hit_at_k_mean": 1.0,
        "hit_at_k_turns": 1.0,
        "povr_mean": 0.0,
        "povr_dialogues": 3,
    }


def test_mining_twice_writes_the_same_bytes(tmp_path):
    write_aci_csv(tmp_path / "corpus")
    for out in ("one", "two"):
        mine_inquiry.fn(corpora=str(tmp_path / "corpus"), out_dir=str(tmp_path / out), settings=TINY)
    one = {p.name: p.read_bytes() for p in (tmp_path / "one").iterdir()}
    assert one == {p.name: p.read_bytes() for p in (tmp_path / "two").iterdir()}
    assert sorted(one) == [
        "manifest.json",
        "partial_orders.json",
        "reference.json",
        "report.md",
        "sequences.json",
        "templates.json",
        "transitions.json",
    ]


@pytest.mark.skipif(not SHIPPED_CORPORA.is_dir(), reason="the shared dialogue corpora are not here")
def test_committed_mined_v1_is_what_mining_the_shipped_corpora_writes(space):
    committed = Path(load_policy.__globals__["DATA_DIR"]) / "mined_v1"
    settings = MiningSettings()
    outputs = render_outputs(mine(read_corpora(SHIPPED_CORPORA), space, settings), settings)
    assert outputs == {name: (committed / name).read_text() for name in outputs}
    assert sorted(p.name for p in committed.iterdir()) == sorted(outputs)


def test_the_committed_policy_loads():
    policy = load_policy("v1")
    assert policy.template_ids == TEMPLATE_IDS
    assert len(policy.top_k_next(None)) == 3
    assert len(set(policy.greedy_sequence(12))) == 12
    with pytest.raises(ValueError, match="no mined inquiry policy 'v9'"):
        load_policy("v9")
