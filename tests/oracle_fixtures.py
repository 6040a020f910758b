"""A tiny oracle data folder in the design's chat format (DIR/chat/<split>.jsonl), written by hand."""

import json
from pathlib import Path

SYSTEM = (
    "You are a patient talking to a clinician. Answer in plain everyday words, in one short sentence, "
    "using only your notes. If your notes say nothing about it, say you are not sure.\n"
    "Your notes: {notes}"
)
# (case id, notes, [(question, answer, kind)]): each patient's positives name its own complaint in lay
# words, and every negative gets the same not-knowing reply, so a few steps can learn the pattern.
PATIENTS = [
    ("p1", "Age 27. My throat has been sore and scratchy for a few days.", "throat", "sore"),
    ("p2", "Age 59. My nose has been stuffy and my face feels full.", "nose", "stuffy"),
    ("p3", "Age 41. My ankle has been swollen since I twisted it.", "ankle", "swollen"),
    ("p4", "Age 66. My head has been pounding most mornings.", "head", "pounding"),
    ("p5", "Age 35. My back has been stiff since I moved house.", "back", "stiff"),
    ("p6", "Age 52. My knee has been aching when I climb stairs.", "knee", "aching"),
]
NOT_SURE = "I'm not sure, I haven't noticed anything like that."


def chat_pair(case_id: str, notes: str, question: str, answer: str, kind: str, split: str) -> dict:
    return {
        "messages": [
            {"role": "system", "content": SYSTEM.format(notes=notes)},
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
        ],
        "case_id": case_id,
        "kind": kind,
        "topic": "fixture",
        "split": split,
    }


def patient_pairs(case_id: str, notes: str, part: str, feeling: str, split: str) -> list[dict]:
    questions = [
        ("What brings you in today?", f"My {part} has been {feeling}.", "positive"),
        (f"How is your {part}?", f"It has been {feeling}, it bothers me.", "positive"),
        ("Have you had any chest pain?", NOT_SURE, "negative"),
        ("Have you had a rash?", NOT_SURE, "negative"),
    ]
    return [chat_pair(case_id, notes, *question, split) for question in questions]


def write_oracle_data(folder: Path) -> Path:
    """Four patients in train, two in validation (split by patient), four pairs each."""
    splits = {"train": PATIENTS[:4], "validation": PATIENTS[4:]}
    (folder / "chat").mkdir(parents=True)
    for split, patients in splits.items():
        rows = [pair for patient in patients for pair in patient_pairs(*patient, split)]
        (folder / "chat" / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder
