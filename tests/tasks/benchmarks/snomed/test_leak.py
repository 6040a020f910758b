"""Leak check, table-driven on both sides: replies that name a gold condition and lay replies that do not;
the compiled matcher against the rule it compiles, one name and one window at a time."""

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz import fuzz

from tasks.benchmarks.snomed import leak
from tasks.benchmarks.snomed.leak import (
    LEAK_THRESHOLD,
    MIN_FUZZY_LENGTH,
    LeakHit,
    LeakMatcher,
    _content_stems,
    _stem,
    core_name,
    find_leaks,
    leak_names,
    normalise_display,
    reading_text,
    unread_letters,
)
from tasks.benchmarks.snomed.patient import leak_names_by_code, load_lexicon
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary

HYPERTENSION = ("59621000", "Essential hypertension (disorder)")


@pytest.mark.parametrize(
    ("reply", "display"),
    [
        ("I was told I have hypertension.", "Essential hypertension (disorder)"),
        ("They said I am hypertensive.", "Essential hypertension (disorder)"),
        ("The doctor wrote hypertenshun on the form.", "Hypertension"),
        ("It was essential hypertension.", "Essential hypertension (disorder)"),
        ("It was sinusitis.", "Viral sinusitis (disorder)"),
        ("I am diabetic.", "Diabetes mellitus type 2 (disorder)"),
        ("I have prediabetes.", "Prediabetes"),
        ("I sprained my ankle.", "Sprain of ankle (disorder)"),
        ("I'm pregnant.", "Normal pregnancy (finding)"),
        ("They said it's chronic pain.", "Chronic pain"),
        ("I have anaemia.", "Anemia (disorder)"),
        ("I had a concussion.", "Concussion with no loss of consciousness (disorder)"),
        ("I have kidney disease.", "Chronic kidney disease stage 1 (disorder)"),
        ("I have metabolic syndrome.", "Metabolic syndrome X (disorder)"),
        ("I had a miscarriage.", "Miscarriage in first trimester"),
        ("I had a stroke.", "Stroke"),
    ],
)
def test_reply_naming_the_condition_leaks(reply, display):
    assert [hit.code for hit in find_leaks(reply, ["1"], [display])] == ["1"]


@pytest.mark.parametrize(
    ("reply", "display"),
    [
        ("I have high blood pressure.", "Essential hypertension (disorder)"),
        ("I have a sinus infection.", "Viral sinusitis (disorder)"),  # lay wording, see leak.py
        ("My sinuses are blocked.", "Viral sinusitis (disorder)"),
        ("I was told I was borderline diabetic.", "Prediabetes"),
        ("I twisted my ankle.", "Sprain of ankle (disorder)"),
        ("My throat is sore.", "Streptococcal sore throat (disorder)"),
        ("My knee has pain.", "Chronic pain"),
        ("I feel tired all the time.", "Anemia (disorder)"),
        ("My kidneys are weak.", "Chronic kidney disease stage 1 (disorder)"),
        ("I have an ear infection.", "Otitis media"),
        ("I lost a baby early on.", "Miscarriage in first trimester"),
        ("My heart stopped once.", "Cardiac Arrest"),
        ("I'm not sure.", "Essential hypertension (disorder)"),
        ("Yellow-green stuff comes out of my nose.", "Gout"),  # a short name one letter from a word
        ("I had a fever and a cough.", "Fever (finding)"),  # a symptom is what the patient feels
        ("I had a fever and a cough.", "Cough (finding)"),
    ],
)
def test_lay_reply_does_not_leak(reply, display):
    assert find_leaks(reply, ["1"], [display]) == ()


def test_a_gold_code_in_the_reply_leaks_but_not_inside_a_longer_number():
    code, display = HYPERTENSION
    assert find_leaks("The form said 59621000.", [code], [display]) == (LeakHit(code, code, code),)
    assert find_leaks("My number is 1596210001.", [code], [display]) == ()
    assert find_leaks("My number is 1 5962-1000 1.", [code], [display]) == (LeakHit(code, code, "5962-1000"),)
    assert find_leaks("It was 2019-05-12.", [code], [display]) == ()


@pytest.mark.parametrize(
    ("reply", "matched"),
    [
        ("I have \uff28\uff59\uff50\uff45\uff52\uff54\uff45\uff4e\uff53\uff49\uff4f\uff4e.", "hypertens"),
        ("I have hyper\u200btension.", "hypertens"),  # a zero-width space inside the word
        ("I have hyper\u00adtension.", "hypertens"),  # a soft hyphen
        ("I have hyper-tension.", "hypertens"),
        ("I have hyper\u2011tension.", "hypertens"),  # a non-breaking hyphen
        ("I have hypertensi\u00f3n.", "hypertens"),
        ("I have HYPERTENSION.", "hypertens"),
        ("The form said \uff15\uff19\uff16\uff12\uff11\uff10\uff10\uff10.", "59621000"),
        ("The form said \u0665\u0669\u0666\u0662\u0661\u0660\u0660\u0660.", "59621000"),  # Arabic-Indic
        ("The form said 5962 1000.", "5962 1000"),
        ("The form said 59.621.000.", "59.621.000"),
        ("The form said 5962 - 1000.", "5962 - 1000"),
        ("The form said 59,621,000.", "59,621,000"),
        ("The form said 5962\n1000.", "5962\n1000"),
        ("I have hyper tension.", "hypertens"),  # a one-word name split by a space
        ("I have hyper.tension.", "hypertens"),
        ("I have hyper\ue000tension.", "hypertens"),  # a private-use character
    ],
)
def test_a_name_or_code_disguised_in_unicode_or_broken_in_parts_leaks(reply, matched):
    code, display = HYPERTENSION
    name = code if matched[0].isdigit() else "hypertension"
    assert (find_leaks(reply, [code], [display]), unread_letters(reply)) == (
        (LeakHit(code, name, matched),),
        "",
    )


@pytest.mark.parametrize(
    ("reply", "unread"),
    [
        ("I have hyp\u0435rt\u0435nsion.", "\u0435"),  # Cyrillic e's that look like Latin ones
        (
            "\u0423 \u043c\u0435\u043d\u044f \u0433\u0438\u043f\u0435\u0440\u0442\u043e\u043d\u0438\u044f.",
            "\u0443\u043c\u0435\u043d\u044f\u0433\u0438\u043f\u0440\u0442\u043e",
        ),
        ("\u9ad8\u8840\u538b", "\u9ad8\u8840\u538b"),
        ("My creatinine was 80 \u00b5mol/L.", "\u03bc"),  # the micro sign is Greek mu once folded
    ],
)
def test_a_reply_with_letters_the_check_cannot_read_is_not_read_whole(reply, unread):
    assert (find_leaks(reply, [HYPERTENSION[0]], [HYPERTENSION[1]]), unread_letters(reply)) == ((), unread)


def test_a_name_with_one_letter_the_check_cannot_read_leaks_through_the_words_beside_it():
    reply = "I have hypert\u0435nsion."  # the Cyrillic e parts the word in two, which are read joined
    assert (find_leaks(reply, [HYPERTENSION[0]], [HYPERTENSION[1]]), unread_letters(reply)) == (
        (LeakHit(HYPERTENSION[0], "hypertension", "hypertns"),),
        "\u0435",
    )


@pytest.mark.parametrize(
    "reply",
    [
        "I have high blood pressure.",
        "Na\u00efve, caf\u00e9, stra\u00dfe, \ufb01ne \u2014 38\u00b0C, 3\u00bd days, \U0001f642",
    ],
)
def test_latin_accents_ligatures_and_symbols_are_read(reply):
    assert unread_letters(reply) == ""


def test_extra_names_leak_and_hits_follow_gold_order():
    codes, displays = ["840539006", "59621000"], ["Disease caused by SARS-CoV-2 (disorder)", "Hypertension"]
    reply = "I have hypertension and I had covid."
    assert find_leaks(reply, codes, displays, {"840539006": ["COVID"]}) == (
        LeakHit("840539006", "covid", "covid"),
        LeakHit("59621000", "hypertension", "hypertens"),
    )
    assert find_leaks(reply, codes, displays) == (LeakHit("59621000", "hypertension", "hypertens"),)


@pytest.mark.parametrize(
    ("display", "normalised", "core"),
    [
        ("Viral sinusitis (disorder)", "viral sinusitis", "sinusitis"),
        ("Normal pregnancy (finding)", "normal pregnancy", "pregnancy"),
        ("Fracture of ankle", "fracture of ankle", "fracture"),
        ("Whiplash injury to neck", "whiplash injury to neck", "whiplash"),
        ("Streptococcal sore throat (disorder)", "streptococcal sore throat", "streptococcal sore throat"),
        ("Chronic pain", "chronic pain", None),
        ("Diabetes mellitus type 2 (disorder)", "diabetes mellitus type 2", "diabetes"),
    ],
)
def test_normalise_display_and_core_name(display, normalised, core):
    assert (normalise_display(display), core_name(display)) == (normalised, core)


def test_leak_names_are_unique():
    assert leak_names("Hypertension", ["hypertension", "HTN"]) == ("hypertension", "htn")


def _pairwise_window(reply_stems: list[str], name: str) -> str | None:
    """The rule as first written: every window of the reply scored against one name at a time."""
    name_stems = _content_stems(name)
    if not name_stems:
        return None
    target, size = " ".join(name_stems), len(name_stems)
    threshold = LEAK_THRESHOLD if len(name) >= MIN_FUZZY_LENGTH else 100.0
    for start in range(len(reply_stems) - size + 1):
        window = " ".join(reply_stems[start : start + size])
        if fuzz.ratio(window, target) >= threshold:
            return window
    return None


def pairwise_leaks(reply, codes, displays, extra_names):
    """find_leaks before the compiled matcher: one loop per gold item, per name, per window, in each reading
    (words broken by a hyphen apart, then joined; for a one-word name, each two adjacent words joined)."""
    read = reading_text(reply)
    readings = [_content_stems(read), _content_stems(re.sub(r"(?<=[a-z])-(?=[a-z])", "", read))]
    words = re.findall(r"[a-z0-9]+", read.replace("'", ""))
    joined_pairs = [_stem(first + second) for first, second in itertools.pairwise(words)]
    hits = []
    for code, display in zip(codes, displays, strict=True):
        written = re.search(r"(?<![0-9])" + r"[\s,._/-]{0,4}".join(code) + r"(?![0-9])", read)
        if written:
            hits.append(LeakHit(code, code, written.group()))
            continue
        windows = (
            (name, _pairwise_window(stems, name))
            for name in leak_names(display, extra_names.get(code, ()))
            for stems in [*readings, *([joined_pairs] if len(_content_stems(name)) == 1 else [])]
        )
        hits += [LeakHit(code, name, window) for name, window in windows if window is not None][:1]
    return tuple(hits)


VOCABULARY = derive_synthea_vocabulary()
EXTRA_NAMES = leak_names_by_code(load_lexicon())
LAY_WORDS = ["i", "have", "had", "my", "the", "of", "with", "was", "told", "it's", "tired", "pain", "covid"]


def _misspelt(words: list[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda word, cut: word[:cut] + word[cut + 1 :], st.sampled_from(words), st.integers(0, 8)
    )


@given(st.lists(st.sampled_from(sorted(VOCABULARY)), min_size=1, max_size=12), st.data())
def test_the_compiled_matcher_finds_what_the_pairwise_rule_finds(codes, data):
    """Replies made of the gold items' names and words (misspelt at times), lay words, stopwords and codes."""
    displays = [VOCABULARY[code].display for code in codes]
    names = sorted(
        {n for c, d in zip(codes, displays, strict=True) for n in leak_names(d, EXTRA_NAMES.get(c, ()))}
    )
    gold_words = sorted({word for name in names for word in name.split()} | {displays[0].lower()})
    words = st.sampled_from([*names, *gold_words]) | _misspelt([*names, *gold_words])
    words |= st.sampled_from([*LAY_WORDS, *codes])
    reply = " ".join(data.draw(st.lists(words, max_size=40)))
    assert find_leaks(reply, codes, displays, EXTRA_NAMES) == pairwise_leaks(
        reply, codes, displays, EXTRA_NAMES
    )


def test_the_whole_vocabulary_is_matched_in_one_pass_per_window_size(monkeypatch):
    """Work is counted: one rapidfuzz table per name size, each reply window against each fuzzy name once,
    then each two adjacent words joined against the one-word fuzzy names once."""
    matcher = LeakMatcher(list(VOCABULARY), [e.display for e in VOCABULARY.values()], EXTRA_NAMES)
    tables = []
    cdist = leak.process.cdist

    def counting_cdist(queries, choices, **options):
        tables.append((len(queries), len(choices)))
        return cdist(queries, choices, **options)

    monkeypatch.setattr(leak.process, "cdist", counting_cdist)
    stems = 4 * leak._WINDOW_CHUNK
    sentence = "I was told it is hypertension "  # six words, two of them content words
    hits = matcher.hits(sentence * (stems // 2))
    assert hits == (LeakHit("59621000", "hypertension", "hypertens"),)
    fuzzy_sizes = {
        size: len(table.fuzzy_targets) for size, table in matcher._tables.items() if table.fuzzy_targets
    }
    expected = [
        (min(leak._WINDOW_CHUNK, stems - size + 1 - offset), names)
        for size, names in fuzzy_sizes.items()
        for offset in range(0, stems - size + 1, leak._WINDOW_CHUNK)
    ]
    pairs = 3 * stems - 1
    expected += [
        (min(leak._WINDOW_CHUNK, pairs - offset), fuzzy_sizes[1])
        for offset in range(0, pairs, leak._WINDOW_CHUNK)
    ]
    assert tables == expected
    assert sum(rows * names for rows, names in tables) <= (stems + pairs) * sum(fuzzy_sizes.values())


_FULL_WIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
_ARABIC_INDIC = {str(d): chr(0x0660 + d) for d in range(10)}
_DISGUISES = {
    "full width": lambda text: "".join(_FULL_WIDTH.get(c, c) for c in text),
    "accents": lambda text: "".join(c + "\u0301" if c in "aeiou" else c for c in text),
    "zero-width spaces": lambda text: "\u200b".join(text.split(" ")[0]) + text[len(text.split(" ")[0]) :],
    "soft hyphens": lambda text: "".join(c + "\u00ad" if c.isalpha() else c for c in text),
    "Arabic-Indic digits": lambda text: "".join(_ARABIC_INDIC.get(c, c) for c in text),
    "upper case": str.upper,
}


@given(st.lists(st.sampled_from(sorted(VOCABULARY)), min_size=1, max_size=6), st.data())
def test_a_disguised_reply_leaks_what_the_plain_reply_leaks(codes, data):
    """Unicode forms a reader sees as the same words and digits leak the same conditions."""
    displays = [VOCABULARY[code].display for code in codes]
    names = [n for c, d in zip(codes, displays, strict=True) for n in leak_names(d, EXTRA_NAMES.get(c, ()))]
    reply = " ".join(data.draw(st.lists(st.sampled_from([*names, *codes, *LAY_WORDS]), max_size=12)))
    disguise = data.draw(st.sampled_from(sorted(_DISGUISES)))
    disguised = _DISGUISES[disguise](reply)
    plain = [hit.code for hit in find_leaks(reply, codes, displays, EXTRA_NAMES)]
    assert [hit.code for hit in find_leaks(disguised, codes, displays, EXTRA_NAMES)] == plain
    assert unread_letters(disguised) == ""


@given(
    st.sampled_from(sorted(VOCABULARY)),
    st.dictionaries(
        st.integers(1, 17), st.sampled_from([" ", "-", ".", "/", " - ", ",", "_", "\n", " -- "]), max_size=4
    ),
)
def test_a_code_written_in_groups_leaks(code, cuts):
    written = code
    for position, separator in sorted(cuts.items(), reverse=True):
        if position < len(code):
            written = written[:position] + separator + written[position:]
    display = VOCABULARY[code].display
    assert [hit.code for hit in find_leaks(f"The form said {written}.", [code], [display])] == [code]


@given(st.text(max_size=30), st.sampled_from("\u0435\u0430\u03bf\u05d0\u4e2d\u0905"), st.integers(0, 30))
def test_a_letter_outside_latin_is_never_read(text, letter, position):
    """Total on any text, and a Cyrillic, Greek, Hebrew, Chinese or Devanagari letter is reported unread."""
    assert letter in unread_letters(text[:position] + letter + text[position:])
