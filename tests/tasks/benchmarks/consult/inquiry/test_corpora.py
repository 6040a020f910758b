import pytest

from tasks.benchmarks.consult.inquiry.corpora import (
    CorpusError,
    Dialogue,
    dialogues_with_doctor,
    extract_questions,
    read_corpora,
    read_textgrid,
)
from tests.tasks.benchmarks.consult.inquiry.fixtures import textgrid_long, write_aci_csv, write_primock

SHORT_TEXTGRID = """File type = "ooTextFile"
Object class = "TextGrid"

0
3
<exists>
2
"IntervalTier"
"Doctor"
0
3
2
0
1
"Any fever?"
1
3
""
"TextTier"
"events"
0
3
1
0.5
"cough"
"""


def test_aci_bench_csv_and_primock57_textgrids_become_dialogues(tmp_path):
    write_aci_csv(tmp_path / "aci", {"D9": ["when did it start ?"]})
    write_primock(tmp_path / "primock")
    assert read_corpora(tmp_path) == [
        Dialogue(
            "aci-bench/D9",
            (("doctor", "okay . when did it start ?"), ("patient", "well , i'm not sure .")),
        ),
        Dialogue(
            "primock57/day1_consultation01",
            (
                ("doctor", "Hello. What brings you in today?"),
                ("patient", 'My "chest" hurts.'),
                ("doctor", "When did it start?"),
            ),
        ),
    ]


def test_textgrid_long_and_short_formats_read_alike():
    long = textgrid_long("Doctor", [(0, 1, "Any fever?"), (1, 3, "")])
    assert read_textgrid(long) == [("Doctor", [(0.0, 1.0, "Any fever?"), (1.0, 3.0, "")])]
    assert read_textgrid(SHORT_TEXTGRID) == [("Doctor", [(0.0, 1.0, "Any fever?"), (1.0, 3.0, "")])]


def test_a_path_with_no_corpus_is_a_corpus_error(tmp_path):
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(CorpusError, match="no dialogue found"):
        read_corpora(tmp_path)
    with pytest.raises(CorpusError, match="no such file or folder"):
        read_corpora(tmp_path / "missing")


def test_physician_questions_by_question_mark_or_opening():
    dialogue = Dialogue(
        "x",
        (
            ("doctor", "hi , martha . how are you ? okay ? so what we'll do is order an x-ray ."),
            ("patient", "do you think it is bad ?"),
            ("doctor", "okay and do you have any allergies . tell me about the pain . any fever or chills"),
            ("doctor", "is that surgery . the pain is sharp ."),
        ),
    )
    assert extract_questions(dialogue) == [
        "how are you?",
        "okay and do you have any allergies.",
        "tell me about the pain.",
        "any fever or chills",
        "is that surgery.",
    ]


def test_a_csv_in_another_encoding_is_a_corpus_error_naming_it(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes("encounter_id,dialogue\nD1,[doctor] caf\u00e9 ?\n".encode("latin-1"))
    with pytest.raises(CorpusError) as raised:
        read_corpora(tmp_path)
    assert str(raised.value) == (
        f"{path}: not UTF-8 text (byte 0xe9 on line 2); re-save it as UTF-8, e.g. iconv -f latin1 -t utf-8"
    )


def test_dialogues_without_a_doctor_turn_are_counted_and_none_at_all_is_a_corpus_error(tmp_path):
    asking = Dialogue("aci-bench/D1", (("doctor", "when did it start ?"), ("patient", "monday .")))
    untagged = Dialogue("aci-bench/D2", ())
    assert dialogues_with_doctor([asking, untagged], tmp_path) == ([asking], 1)
    with pytest.raises(CorpusError) as raised:
        dialogues_with_doctor([untagged, Dialogue("aci-bench/D3", (("doctor", "okay ."),))], tmp_path)
    assert str(raised.value) == (
        f"{tmp_path}: none of its 2 dialogues holds a doctor's question (1 have a doctor turn); ACI-Bench "
        "dialogues tag each line [doctor] or [patient], PriMock57 transcripts come as "
        "<consultation>_doctor.TextGrid and _patient.TextGrid"
    )
