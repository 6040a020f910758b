import math
import time

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from tasks.benchmarks.consult.inquiry.templates import (
    DATA_DIR,
    TEMPLATE_IDS,
    TemplateSpace,
    load_catalogue,
    terms,
)
from tests.tasks.benchmarks.consult.inquiry.strategies import questions, unread_words


@pytest.fixture(scope="module")
def space():
    return TemplateSpace(load_catalogue("v1"), threshold=0.3)


def test_the_catalogue_holds_exactly_the_shared_template_ids():
    catalogue = load_catalogue("v1")
    assert catalogue.ids == TEMPLATE_IDS
    assert all(4 <= len(t.paraphrases) <= 8 and t.keywords and t.name for t in catalogue.templates)


def test_a_catalogue_missing_a_template_names_the_file_and_the_id(tmp_path):
    data = yaml.safe_load((DATA_DIR / "templates_v1.yaml").read_text())
    data["templates"] = [t for t in data["templates"] if t["id"] != "allergies"]
    path = tmp_path / "templates_v9.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"(?s)templates_v9\.yaml.*missing \['allergies'\], unknown \[\]"):
        load_catalogue(path=path)


@pytest.mark.parametrize(
    ("question", "template"),
    [
        ("So how long has this been going on?", "onset_duration"),
        ("Are you on any medicines at the moment?", "medications"),
        ("Any allergies to medications?", "allergies"),
        ("Has anyone in your family had this?", "family_history"),
        ("Any fever or chills?", "fever_chills"),
        ("Does the pain spread to your arm?", "location_radiation"),
        ("What is the capital of France?", None),
        ("Okay.", None),
    ],
)
def test_a_question_matches_its_template_and_an_off_topic_one_none(space, question, template):
    assert space.match(question)[0] == template


def test_a_word_outside_the_vocabulary_keeps_its_weight_in_the_question(space):
    # Read alone, "long" is the duration template's keyword (cosine 1.0); "cuogh" is a term no example
    # holds, weighted at the smoothed idf of document frequency 0: ln(1 + 163 examples) + 1.
    assert space.unread_terms("Any cuogh how long?") == ("cuogh",)
    long_idf = space._idf[space._vocabulary["long"]]
    unread_idf = math.log(1 + 163) + 1
    assert space.match("Any cuogh how long?") == (
        "onset_duration",
        pytest.approx(long_idf / math.hypot(long_idf, unread_idf)),
    )
    assert space.match("How long?") == ("onset_duration", pytest.approx(1.0))
    assert space.match("Any cuogh?") == (None, 0.0)


def test_every_paraphrase_of_the_catalogue_matches_its_own_template(space):
    mismatched = [
        (template.id, paraphrase, space.match(paraphrase)[0])
        for template in space.catalogue.templates
        for paraphrase in template.paraphrases
        if space.match(paraphrase)[0] != template.id
    ]
    assert mismatched == []


def test_matching_is_pure_and_fast(space):
    questions = [f"have you had a cough for {n} days?" for n in range(2000)]
    started = time.perf_counter()
    first = [space.match(q) for q in questions]
    per_question = (time.perf_counter() - started) / len(questions)
    assert [space.match(q) for q in questions] == first
    assert per_question < 0.001


@given(question=questions, word=unread_words)
def test_an_unread_word_never_raises_a_match_and_never_changes_the_template_it_keeps(space, question, word):
    assume(space.unread_terms(word) == tuple(terms(word)) and terms(word))
    read_template, read_cosine = space.match(question)
    template, cosine = space.match(f"{question} {word}")
    assert template in (read_template, None)
    assert cosine < read_cosine or read_cosine == cosine == 0.0


@given(words=st.lists(unread_words, min_size=1, max_size=6))
def test_a_question_of_unread_words_only_matches_nothing(space, words):
    question = " ".join(words)
    assume(space.unread_terms(question) == tuple(terms(question)))
    assert space.match(question) == (None, 0.0)
