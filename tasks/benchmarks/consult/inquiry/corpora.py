"""Doctor-patient dialogue corpora (ACI-Bench CSVs, PriMock57 TextGrids) -> dialogues, and their questions.

Question rule: a doctor's utterance is split into sentences (after `.`, `?` or `!`); a sentence is a
question when it ends with `?` or, once leading fillers ("okay", "so", "and", "um", ...) are dropped,
opens like one: a wh-word not followed by "i" or "we" ("what we'll do is ..." is a plan), an auxiliary
followed by a subject ("do you", "is it", "have there"), "any", or a request ("tell me", "describe").
Sentences of fewer than three words ("okay?", "sorry?") are not questions: they carry no question type.
"""

import csv
import io
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

Speaker = Literal["doctor", "patient", "other"]
WH_WORDS = frozenset(["what", "when", "where", "which", "who", "whose", "why", "how", "any", "anything"])
AUXILIARIES = frozenset(
    [
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "have",
        "has",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
    ]
)
SUBJECTS = frozenset(
    [
        "you",
        "your",
        "it",
        "there",
        "they",
        "he",
        "she",
        "that",
        "this",
        "the",
        "anyone",
        "anybody",
        "anything",
        "any",
    ]
)
SPEAKER_SELF = frozenset(["i", "we", "i'm", "i'll", "i'd", "i've", "we'll", "we're", "we've", "we'd"])
REQUESTS = (("tell", "me"), ("describe",), ("explain",))
FILLERS = frozenset(
    [
        "okay",
        "ok",
        "so",
        "and",
        "um",
        "uh",
        "umm",
        "er",
        "erm",
        "now",
        "alright",
        "well",
        "yeah",
        "right",
        "oh",
        "but",
        "then",
        "also",
    ]
)
MIN_QUESTION_WORDS = 3


class Dialogue(NamedTuple):
    dialogue_id: str
    turns: tuple[tuple[Speaker, str], ...]


class CorpusError(ValueError):
    """A path holds no dialogue of a known corpus, or a file of one cannot be read."""


def read_csv_rows(path: Path) -> list[list[str]]:
    """A UTF-8 CSV's rows; a file in another encoding is a CorpusError naming it and the first bad byte."""
    csv.field_size_limit(sys.maxsize)  # a whole dialogue is one field
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CorpusError(
            f"{path}: not UTF-8 text (byte {data[error.start]:#04x} on line {line}); re-save it as UTF-8, "
            "e.g. iconv -f latin1 -t utf-8"
        ) from None
    return list(csv.reader(io.StringIO(text, newline="")))


def aci_bench_dialogues(rows: list[list[str]]) -> list[Dialogue]:
    """An ACI-Bench CSV's rows (`encounter_id`, `dialogue` with `[doctor]`/`[patient]` line tags) ->
    dialogues; [] for a CSV without those columns (ACI-Bench's `*_metadata.csv`)."""
    header, *body = rows or [[]]
    if not {"encounter_id", "dialogue"} <= set(header):
        return []
    encounter, dialogue = header.index("encounter_id"), header.index("dialogue")
    return [
        Dialogue(f"aci-bench/{row[encounter]}", parse_tagged_dialogue(row[dialogue]))
        for row in body
        if len(row) > max(encounter, dialogue)
    ]


def parse_tagged_dialogue(text: str) -> tuple[tuple[Speaker, str], ...]:
    """`[doctor] ...` / `[patient] ...` lines -> turns; `[patient_guest]` and other tags are `other`."""
    turns: list[tuple[Speaker, str]] = []
    for tag, utterance in re.findall(r"^\[(\w+)\]\s*(.*)$", text, flags=re.MULTILINE):
        speaker: Speaker = tag if tag in ("doctor", "patient") else "other"
        turns.append((speaker, utterance.strip()))
    return tuple(turns)


def read_textgrid(text: str) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """A Praat TextGrid (long or short text format) -> its interval tiers as (name, [(xmin, xmax, text)]).

    Both formats are the same sequence of values; the long one labels them (`xmin = 0`, `intervals [1]:`).
    Labels are dropped, then values are read in order. Point tiers are skipped.
    """
    values: list[str | float] = []
    for line in text.splitlines():
        line = line.strip()
        if re.fullmatch(r"[\w ]+(\[\d*\])?:", line):  # `item []:`, `intervals [3]:`
            continue
        if re.match(r"^[\w ?]+(\[\d*\])?\s*[=:]", line) and not line.startswith('"'):
            line = re.split(r"[=:]", line, maxsplit=1)[1].strip()
            line = re.sub(r"^size = ", "", line)  # `intervals: size = 97`
        for quoted, number in re.findall(r'"((?:[^"]|"")*)"|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)', line):
            values.append(quoted.replace('""', '"') if not number else float(number))
    if values[:2] != ["ooTextFile", "TextGrid"]:
        raise CorpusError("not a Praat TextGrid text file")
    position, tiers = 5, []  # after file type, class, xmin, xmax, tier count
    for _ in range(int(values[4])):
        tier_class, name, count = values[position], values[position + 1], int(values[position + 4])
        position += 5
        width = 3 if tier_class == "IntervalTier" else 2
        rows = [values[position + width * i : position + width * (i + 1)] for i in range(count)]
        position += width * count
        if tier_class == "IntervalTier":
            tiers.append((str(name), [(float(a), float(b), str(t)) for a, b, t in rows]))
    return tiers


def read_primock57(folder: Path) -> list[Dialogue]:
    """PriMock57 transcripts (`<consultation>_doctor.TextGrid` + `_patient.TextGrid`) -> dialogues.

    The speaker is taken from the file name (the tier is often just "Speaker"); both speakers' intervals
    are interleaved by start time; transcription marks (`<UNIN/>`, `<UNSURE>...</UNSURE>`) are removed.
    """
    dialogues = []
    for doctor_file in sorted(folder.rglob("*_doctor.TextGrid")):
        consultation = doctor_file.name.removesuffix("_doctor.TextGrid")
        timed: list[tuple[float, Speaker, str]] = []
        for speaker, path in (
            ("doctor", doctor_file),
            ("patient", doctor_file.with_name(f"{consultation}_patient.TextGrid")),
        ):
            if not path.exists():
                continue
            try:
                tiers = read_textgrid(path.read_text(encoding="utf-8-sig"))
            except (CorpusError, IndexError, ValueError) as error:
                raise CorpusError(f"{path}: cannot read it as a TextGrid ({error})") from None
            for _, intervals in tiers:
                for start, _, text in intervals:
                    clean = re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", text)).strip()
                    if clean:
                        timed.append((start, speaker, clean))  # type: ignore[arg-type]
        timed.sort(key=lambda row: (row[0], row[1]))
        dialogues.append(Dialogue(f"primock57/{consultation}", tuple((s, t) for _, s, t in timed)))
    return dialogues


def read_corpora(path: Path) -> list[Dialogue]:
    """Every ACI-Bench dialogue CSV and PriMock57 transcript under `path` (a file or a folder), by id.

    CSVs without a dialogue column (ACI-Bench's `*_metadata.csv`) are skipped; a dialogue id seen twice is
    kept once (the first file in path order). Raises CorpusError when nothing is found.
    """
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    csv_files = [path] if path.is_file() and path.suffix == ".csv" else sorted(path.rglob("*.csv"))
    dialogues: dict[str, Dialogue] = {}
    for file in csv_files:
        for dialogue in aci_bench_dialogues(read_csv_rows(file)):
            dialogues.setdefault(dialogue.dialogue_id, dialogue)
    if path.is_dir():
        for dialogue in read_primock57(path):
            dialogues.setdefault(dialogue.dialogue_id, dialogue)
    if not dialogues:
        raise CorpusError(
            f"{path}: no dialogue found (expected ACI-Bench CSVs with a dialogue column or PriMock57 "
            "*_doctor.TextGrid transcripts)"
        )
    return [dialogues[key] for key in sorted(dialogues)]


def dialogues_with_doctor(dialogues: Sequence[Dialogue], path: Path) -> tuple[list[Dialogue], int]:
    """The dialogues with a doctor turn, and how many had none (no `[doctor]` tag or `_doctor` transcript:
    nothing to mine). Raises CorpusError when no dialogue holds a doctor's question: mining needs some."""
    kept = [d for d in dialogues if any(speaker == "doctor" for speaker, _ in d.turns)]
    if not any(extract_questions(dialogue) for dialogue in kept):
        raise CorpusError(
            f"{path}: none of its {len(dialogues)} dialogues holds a doctor's question ({len(kept)} have a "
            "doctor turn); ACI-Bench dialogues tag each line [doctor] or [patient], PriMock57 transcripts "
            "come as <consultation>_doctor.TextGrid and _patient.TextGrid"
        )
    return kept, len(dialogues) - len(kept)


def extract_questions(dialogue: Dialogue) -> list[str]:
    """The doctor's questions in a dialogue, in order (the rule is in this module's docstring)."""
    questions = []
    for speaker, utterance in dialogue.turns:
        if speaker != "doctor":
            continue
        for sentence in re.split(r"(?<=[.?!])\s+", utterance):
            sentence = re.sub(r"\s+([,.?!])", r"\1", sentence.strip())
            if is_question(sentence):
                questions.append(sentence)
    return questions


def is_question(sentence: str) -> bool:
    """A sentence of 3+ words ending in `?` or opening like a question (the module docstring's rule)."""
    words = re.findall(r"[a-z']+", sentence.lower())
    if len(words) < MIN_QUESTION_WORDS:
        return False
    if sentence.endswith("?"):
        return True
    content = words[next((i for i, word in enumerate(words) if word not in FILLERS), len(words)) :]
    first, second = ([*content, "", ""])[:2]
    return (
        (first in WH_WORDS and second not in SPEAKER_SELF)
        or (first in AUXILIARIES and second in SUBJECTS)
        or any(tuple(content[: len(request)]) == request for request in REQUESTS)
    )
