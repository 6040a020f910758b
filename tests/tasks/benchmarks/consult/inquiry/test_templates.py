import time

import pytest
import yaml

from tasks.benchmarks.consult.inquiry.templates import DATA_DIR, TEMPLATE_IDS, TemplateSpace, load_catalogue


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
