import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult import metrics
from tasks.benchmarks.consult.case import CaseAiu, ConsultCase, GoldDiagnosis, PatientProfile
from tasks.benchmarks.consult.composite import stage_score
from tasks.benchmarks.consult.contracts import HISTORY_METRICS
from tasks.benchmarks.consult.episode import DiagnosisItem, Episode, HistoryTurn
from tasks.benchmarks.consult.inquiry.policy import END, InquiryPolicy, PartialOrder
from tasks.benchmarks.consult.kb.icd11 import normalise_diagnosis
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.models import AiuType, Condition, Evidence, Regimen
from tasks.benchmarks.consult.metrics import (
    DiagnosisScores,
    HistoryScores,
    is_ready,
    parse_differential,
    score_diagnosis,
    score_history,
)
from tasks.core.json_text import MAX_DEPTH, MAX_TOKENS


def aiu_type(aiu_id, template, positive):
    return AiuType(
        id=aiu_id,
        category="symptom",
        template=template,
        statement=aiu_id + " {value}",
        positive=positive,
        negative="No.",
        source="test",
    )


def condition(condition_id, title, icd11, severity, evidence, mni, department="respiratory"):
    return Condition(
        id=condition_id,
        title=title,
        icd11=icd11,
        department=department,
        severity=severity,
        evidence=tuple(Evidence(aiu=a, weight=1.0, direction=d) for a, d in evidence),
        mni=mni,
        regimen=Regimen(advice="rest"),
        source="test",
    )


KB = KnowledgeBase(
    version=1,
    aiu_types=(
        aiu_type("cough", "respiratory", "I've had a cough for {value}."),
        aiu_type("sputum", "respiratory", "I'm bringing up {value} phlegm."),
        aiu_type("fever", "fever_chills", "I've had a fever for {value}."),
        aiu_type("confusion", "neurological", "My family says I've been muddled {value}."),
        aiu_type("wheeze", "respiratory", "My chest whistles {value}."),
        aiu_type("smoking", "social_history", "I smoke {value}."),
        aiu_type("rash", "skin", "I've got a rash on my {value}."),
        aiu_type("dehydration", "systemic_red_flags", "I've had {value}."),  # part of others: never used
    ),
    conditions=(
        condition(
            "pneumonia",
            "Pneumonia",
            "CA40",
            3,
            [("cough", "supports"), ("fever", "supports"), ("confusion", "supports")],
            ("cough", "fever", "confusion"),
        ),
        condition(
            "bronchitis",
            "Acute bronchitis",
            "CA42",
            1,
            [("cough", "supports"), ("sputum", "supports"), ("confusion", "rules_out")],
            ("cough", "sputum"),
        ),
        condition(
            "asthma",
            "Asthma",
            "CA23",
            2,
            [("wheeze", "supports"), ("cough", "supports"), ("fever", "rules_out")],
            ("wheeze", "cough"),
        ),
        condition(
            "eczema",
            "Atopic eczema",
            "EA80",
            1,
            [("rash", "supports"), ("smoking", "supports")],
            ("rash", "smoking"),
            department="dermatology",
        ),
    ),
    drug_classes=(),
    drugs=(),
    interactions=(),
    contraindications=(),
)

POLICY_TEMPLATES = [
    "chief_complaint",
    "respiratory",
    "fever_chills",
    "social_history",
    "neurological",
    "skin",
]


def counts(**rows):
    """Transition counts: rows START and templates, columns templates and END; unnamed cells are 0."""
    columns = [*POLICY_TEMPLATES, END]
    matrix = np.zeros((len(POLICY_TEMPLATES) + 1,) * 2)
    for row, cells in rows.items():
        for column, count in cells.items():
            matrix[(["START", *POLICY_TEMPLATES]).index(row), columns.index(column)] = count
    return matrix


# Top 3 (k = 3): after START chief_complaint, respiratory, skin; after respiratory fever_chills,
# neurological, chief_complaint; after social_history fever_chills, skin, respiratory.
POLICY = InquiryPolicy(
    POLICY_TEMPLATES,
    counts(
        START={"chief_complaint": 10, "respiratory": 5, "skin": 3},
        respiratory={"fever_chills": 8, "neurological": 4, "chief_complaint": 2},
        social_history={"fever_chills": 5, "skin": 3, "respiratory": 2},
    ),
    smoothing=0.5,
    partial_orders=[
        PartialOrder("chief_complaint", "respiratory", 9, 0.9),  # chief_complaint never asked: n/a
        PartialOrder("respiratory", "fever_chills", 9, 0.9),  # kept
        PartialOrder("fever_chills", "social_history", 9, 0.9),  # broken: social_history at 2, fever at 4
        PartialOrder("neurological", "skin", 9, 0.9),  # neither asked: n/a
    ],
)


def make_case(mni_target=("cough", "fever", "confusion", "sputum"), department="respiratory"):
    return ConsultCase(
        case_id="c1",
        department=department,
        opening="I feel awful.",
        profile=PatientProfile(age=40, sex="male"),
        gold=(
            GoldDiagnosis(condition_id="pneumonia", icd11="CA40", title="Pneumonia", severity=3),
            GoldDiagnosis(
                condition_id="bronchitis", icd11="CA42", title="Acute bronchitis", core=False, severity=1
            ),
        ),
        aius=(
            CaseAiu(aiu_id="cough", template="respiratory", value="a week"),
            CaseAiu(aiu_id="sputum", template="respiratory", value="green"),
            CaseAiu(aiu_id="fever", template="fever_chills", value="3 days", safety=("red_flag",)),
            CaseAiu(aiu_id="confusion", template="neurological", safety=("red_flag",)),
            CaseAiu(aiu_id="smoking", template="social_history", value="10 a day", role="distractor"),
        ),
        mni_target=mni_target,
    )


TURNS = (
    HistoryTurn(
        turn=1, question="Do you have a cough?", template="respiratory", revealed=("cough", "sputum")
    ),
    HistoryTurn(turn=2, question="Do you smoke?", template="social_history", revealed=("smoking",)),
    HistoryTurn(turn=3, question="Nice weather?", template=None, deflected=True),
    HistoryTurn(turn=4, question="Any fever?", template="fever_chills", revealed=("fever",)),
)


def item(rank, condition_id, core=False, diagnosis=None):
    return DiagnosisItem(
        rank=rank,
        diagnosis=diagnosis or str(condition_id),
        core=core,
        condition_id=condition_id,
        match="exact" if condition_id else "unmatched",
    )


def test_history_metrics_by_hand():
    # M = cough, fever, confusion (pneumonia's MNI: w 2) and sputum (not a core MNI item: w 1); sum w = 7.
    # Core-linked templates (pneumonia's evidence): respiratory, fever_chills, neurological.
    scores = score_history(make_case(), Episode(case_id="c1", turns=TURNS), KB, POLICY)
    # MNI-Comp: cough 2 * .95^0 + sputum 1 * .95^0 + fever 2 * .95^3 (turn 4) + confusion 0, over 7.
    mni_comp = (2 + 1 + 2 * 0.95**3) / 7
    # CPRw: turn 1 (w 2) new MNI; turn 2 (w 1) and turn 3 (unmatched, w 1) redundant; turn 4 (w 2) new.
    cprw = (1 + 1) / (2 + 1 + 1 + 2)
    # IGE: (2 + 1 + 2) / 7 revealed, / T = 4, * min(4, |M| = 4).
    ige = 5 / 7 / 4 * 4
    # Hit@1: t1 respiratory in top3(START) w 2 hit; t2 social_history not in top3(respiratory) w 1 miss;
    # t3 unmatched w 1 miss; t4 fever_chills in top3(social_history, the last matched) w 2 hit.
    hit = (2 + 2) / (2 + 1 + 1 + 2)
    # POVR: 2 pairs apply (respiratory<fever_chills kept, fever_chills<social_history broken).
    # Red flags: fever revealed, confusion not: 1 / 2. Deflections: 1 of 4.
    assert scores == HistoryScores(
        mni_comp=pytest.approx(mni_comp),
        cprw=pytest.approx(cprw),
        ige=pytest.approx(ige),
        hit_at_1=pytest.approx(hit),
        povr=0.5,
        questions_asked=4,
        deflection_rate=0.25,
        red_flag_coverage=0.5,
    )


def test_gamma_is_a_parameter():
    # gamma 0.5: (2 + 1 + 2 * 0.5^3) / 7
    scores = score_history(make_case(), Episode(case_id="c1", turns=TURNS), KB, POLICY, gamma=0.5)
    assert scores.mni_comp == pytest.approx((2 + 1 + 0.25) / 7)


def test_ige_discounts_questions_beyond_the_mni_size():
    # M = cough, fever (w 2 each), both revealed; T = 4 > |M| = 2: 1 / 4 * 2.
    scores = score_history(
        make_case(mni_target=("cough", "fever")), Episode(case_id="c1", turns=TURNS), KB, POLICY
    )
    assert scores.ige == 0.5


def test_no_mni_target_leaves_the_mni_metrics_undefined():
    scores = score_history(make_case(mni_target=()), Episode(case_id="c1", turns=TURNS), KB, POLICY)
    assert (scores.mni_comp, scores.cprw, scores.ige) == (None, None, None)


def test_no_question_asked():
    scores = score_history(make_case(), Episode(case_id="c1", turns=()), KB, POLICY)
    assert scores == HistoryScores(
        mni_comp=0.0,
        cprw=None,
        ige=0.0,
        hit_at_1=None,
        povr=None,
        questions_asked=0,
        deflection_rate=None,
        red_flag_coverage=0.0,
    )


@pytest.mark.parametrize(
    "turns",
    [
        (),
        tuple(HistoryTurn(turn=t, question="[" * 3000, template=None, deflected=True) for t in range(1, 13)),
    ],
)
def test_a_history_of_no_question_or_only_unmatched_ones_scores_a_stage_of_zero(turns):
    scores = score_history(make_case(), Episode(case_id="c1", turns=turns), KB, POLICY)._asdict()
    assert stage_score(scores, HISTORY_METRICS) == 0.0


def test_povr_undefined_when_no_pair_applies():
    turns = (HistoryTurn(turn=1, question="Any fever?", template="fever_chills", revealed=("fever",)),)
    assert score_history(make_case(), Episode(case_id="c1", turns=turns), KB, POLICY).povr is None


def test_diagnosis_metrics_by_hand():
    # Gold: pneumonia core (severity 3), bronchitis non-core (severity 1).
    differential = (
        item(1, "asthma", core=True),  # core, not gold core: FP
        item(2, "pneumonia", core=True),  # TP
        item(3, None, diagnosis="Something odd"),  # unmatched, not core
        item(4, "pneumonia"),  # listed again: counts at its best rank, 2
        item(5, "bronchitis"),
    )
    scores = score_diagnosis(make_case(), Episode(case_id="c1", turns=(), differential=differential))
    # TP 1, FN 0, FP 1: recall 1 / 1, F1 2 * 1 / (2 * 1 + 1 + 0).
    # SWDS: (3 / log2(1 + 2) + 1 / log2(1 + 5)) / (3 / log2(2) + 1 / log2(3)).
    swds = (3 / math.log2(3) + 1 / math.log2(6)) / (3 / 1 + 1 / math.log2(3))
    assert scores == DiagnosisScores(
        core_dx_recall=1.0,
        core_dx_f1=pytest.approx(2 / 3),
        swds=pytest.approx(swds),
        top1_accuracy=0.0,
        differential_length=5,
        unmatched_rate=0.2,
    )


def test_duplicate_listing_counts_once_at_its_best_rank():
    differential = (
        item(1, "pneumonia", core=True),
        item(2, "pneumonia", core=True),
        item(3, None, core=True),
    )
    scores = score_diagnosis(make_case(), Episode(case_id="c1", turns=(), differential=differential))
    # TP 1, FN 0, FP 1 (the unmatched core item; the second pneumonia is no FP): F1 2 / 3.
    # SWDS: pneumonia at rank 1, bronchitis unlisted: (3 / 1) / (3 / 1 + 1 / log2(3)).
    assert scores == DiagnosisScores(
        core_dx_recall=1.0,
        core_dx_f1=pytest.approx(2 / 3),
        swds=pytest.approx(3 / (3 + 1 / math.log2(3))),
        top1_accuracy=1.0,
        differential_length=3,
        unmatched_rate=pytest.approx(1 / 3),
    )


def test_gold_core_listed_as_non_core_is_missed():
    differential = (item(1, "pneumonia", core=False),)
    scores = score_diagnosis(make_case(), Episode(case_id="c1", turns=(), differential=differential))
    # TP 0, FN 1, FP 0: recall 0, F1 0; top-1 still the gold core condition.
    assert (scores.core_dx_recall, scores.core_dx_f1, scores.top1_accuracy) == (0.0, 0.0, 1.0)


def test_an_unparseable_differential_scores_the_worst_of_every_metric():
    episode = Episode(
        case_id="c1", turns=(), differential=(item(1, "pneumonia", core=True),), diagnosis_parse="unparseable"
    )
    assert score_diagnosis(make_case(), episode) == DiagnosisScores(
        core_dx_recall=0.0,
        core_dx_f1=0.0,
        swds=0.0,
        top1_accuracy=0.0,
        differential_length=0,
        unmatched_rate=1.0,  # nothing read matched a KB condition
    )


def test_an_empty_differential_that_parsed_finds_nothing_and_lists_nothing():
    scores = score_diagnosis(make_case(), Episode(case_id="c1", turns=(), differential=()))
    assert scores == DiagnosisScores(
        core_dx_recall=0.0,
        core_dx_f1=0.0,  # TP 0, FP 0, FN 1
        swds=0.0,
        top1_accuracy=0.0,
        differential_length=0,
        unmatched_rate=None,  # no item
    )


PNEUMONIA = {"diagnosis": "Pneumonia", "icd11": None, "core": True, "rationale": "fever and cough"}
EXPECTED_PNEUMONIA = DiagnosisItem(
    rank=1,
    diagnosis="Pneumonia",
    icd11=None,
    core=True,
    rationale="fever and cough",
    condition_id="pneumonia",
    match="exact",
)


def test_parse_fenced_json():
    text = f"Here is my differential:\n```json\n{json.dumps([PNEUMONIA])}\n```\nHope it helps."
    assert parse_differential(text, KB) == (EXPECTED_PNEUMONIA,)


def test_parse_list_inside_prose_skipping_other_brackets():
    second = {"diagnosis": "Acute bronchitis", "icd11": "", "core": False}
    text = f"As noted [1], my list: {json.dumps([PNEUMONIA, second])} and that is all."
    assert parse_differential(text, KB) == (
        EXPECTED_PNEUMONIA,
        DiagnosisItem(rank=2, diagnosis="Acute bronchitis", condition_id="bronchitis", match="exact"),
    )


def test_parse_code_wins_over_a_name_naming_no_condition_and_unmatched_names_are_kept():
    text = json.dumps(
        [
            {"diagnosis": "Chest infection", "icd11": "CA40.0", "core": True, "rationale": ""},
            {"diagnosis": "Gout", "icd11": None, "core": False, "rationale": "unlikely"},
            # a code and a name naming two different conditions: which one is meant is not read
            {"diagnosis": "Asthma", "icd11": "CA40.0"},
            # a code not written whole as a code
            {"diagnosis": "Pneumonia", "icd11": "CA40. ruled out"},
        ]
    )
    assert parse_differential(text, KB) == (
        DiagnosisItem(
            rank=1,
            diagnosis="Chest infection",
            icd11="CA40.0",
            core=True,
            condition_id="pneumonia",
            match="code",
        ),
        DiagnosisItem(rank=2, diagnosis="Gout", rationale="unlikely"),
        DiagnosisItem(rank=3, diagnosis="Asthma", icd11="CA40.0"),
        DiagnosisItem(rank=4, diagnosis="Pneumonia", icd11="CA40. ruled out"),
    )


@pytest.mark.parametrize(
    "text",
    [
        '[{"diagnosis": "Pneumonia",}]',  # trailing comma
        "I think it is pneumonia.",  # no list
        '[{"name": "Pneumonia"}]',  # no diagnosis field
        '[{"diagnosis": "Pneumonia", "core": "very"}]',  # core not a boolean
        # a key not read may say the item is no diagnosis; a repeated one, which counts
        '[{"diagnosis": "Pneumonia", "status": "ruled out", "core": true}]',
        '[{"diagnosis": "Pneumonia", "probability": 0}]',
        '[{"diagnosis": "not pneumonia", "diagnosis": "Pneumonia"}]',
        '[{"diagnosis": "Pneumonia", "rationale": false}]',
        "[1, 2]",
    ],
)
def test_unreadable_differential_is_none(text):
    assert parse_differential(text, KB) is None


def test_empty_list_is_an_empty_differential():
    assert parse_differential("Nothing fits: []", KB) == ()


def test_a_differential_inside_an_object_is_found_and_two_different_ones_are_not_read():
    wrapped = json.dumps({"differential": [PNEUMONIA]})
    assert parse_differential(f"Here: {wrapped}", KB) == (EXPECTED_PNEUMONIA,)
    fenced = f"```json\n{json.dumps([PNEUMONIA])}\n```"
    assert parse_differential(f"Final:\n{fenced}\nAgain: {json.dumps([PNEUMONIA])}", KB) == (
        EXPECTED_PNEUMONIA,
    )
    # Which list is the differential is not read: a draft, or the diagnoses ruled out.
    bronchitis = {"diagnosis": "Acute bronchitis", "core": False}
    assert parse_differential(f"Draft: {json.dumps([bronchitis])}\nFinal:\n{fenced}", KB) is None
    assert (
        parse_differential(f"Ruled out: {json.dumps([PNEUMONIA])}\nMine: {json.dumps([bronchitis])}", KB)
        is None
    )
    assert parse_differential(json.dumps({"excluded": [PNEUMONIA], "differential": [bronchitis]}), KB) is None


@pytest.mark.parametrize(
    "text",
    [
        "[" * 3000,  # raised RecursionError
        "[" * 3000 + "]" * 3000,
        # a valid list beside JSON nested past what is read: the unread part might hold the answer
        f"{json.dumps([PNEUMONIA])} and {'[' * (MAX_DEPTH + 1)}{']' * (MAX_DEPTH + 1)}",
        # a reply longer than the scan's budget is not read to its end
        "[]" * MAX_TOKENS + json.dumps([PNEUMONIA]),
    ],
)
def test_a_reply_that_cannot_be_read_whole_is_unparseable(text):
    assert parse_differential(text, KB) is None


DIAGNOSIS_OBJECTS = st.fixed_dictionaries(
    {"diagnosis": st.sampled_from(["Pneumonia", "Acute bronchitis", "Asthma", "Gout"])},
    optional={"icd11": st.none() | st.sampled_from(["CA40", "CA23", ""]), "core": st.booleans()},
)
PROSE = st.text(alphabet=st.characters(exclude_characters='[]{}`"'), max_size=30)


@given(st.text(alphabet=st.sampled_from('[]{}"\\:,` \nadiagnosis0'), max_size=400) | st.text(max_size=200))
def test_any_reply_reads_to_a_differential_or_none_without_raising(text):
    found = parse_differential(text, KB)
    assert found is None or all(isinstance(entry, DiagnosisItem) for entry in found)


@given(st.lists(DIAGNOSIS_OBJECTS, min_size=1, max_size=5), PROSE, PROSE, st.booleans())
def test_a_differential_written_in_prose_or_a_fence_reads_back_item_for_item(entries, before, after, fenced):
    listed = json.dumps(entries)
    text = f"{before}\n```json\n{listed}\n```\n{after}" if fenced else f"{before} {listed} {after}"
    found = parse_differential(text, KB)
    assert [(i.rank, i.diagnosis, i.core) for i in found] == [
        (rank, entry["diagnosis"], entry.get("core", False)) for rank, entry in enumerate(entries, start=1)
    ]


@given(st.lists(DIAGNOSIS_OBJECTS | st.integers() | st.lists(DIAGNOSIS_OBJECTS, max_size=3), max_size=30))
def test_each_diagnosis_is_normalised_at_most_once_whatever_the_reply_holds(entries):
    # Linear work: the KB is searched only for the items of the differential returned, never once per
    # candidate list or per bracket.
    calls = []

    def counting(*args):
        calls.append(args)
        return normalise_diagnosis(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "normalise_diagnosis", counting)
        found = parse_differential(f"My list: {json.dumps(entries)} [also] {json.dumps(entries)}", KB)
    assert len(calls) == len(found or ())


@pytest.mark.parametrize(
    ("text", "ready"),
    [
        ("<Ready to diagnose>", True),
        ("Thank you, that is all.\nREADY TO DIAGNOSE", True),
        ("<ready to diagnose>.", True),
        ("Thank you, I have what I need. <Ready to diagnose>", True),
        ("Thanks. < ready to diagnose > I will now think it over.", True),
        ("<Ready  to\tDiagnose>\nThank you.", True),
        ("I am not ready to diagnose yet. Any fever?", False),
        ("Ready to diagnose soon: any fever?", False),
        ("Do you have a cough?", False),
        ("Any fever?\r\nReady to diagnose.\r\n", True),
        # runs of line breaks and spaces around the words: once read in time quadratic in their length
        ("\n" * 20_000 + "Any fever?", False),
        (" \n" * 20_000 + "ready to diagnose", True),
        ("ready to diagnose" + " " * 20_000 + "now?", False),
    ],
)
def test_is_ready(text, ready):
    assert is_ready(text) is ready
