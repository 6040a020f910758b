"""Tiny hand-written dialogue corpora, written to tmp_path in the corpora's own formats."""

import csv
from pathlib import Path

# Three consultations whose doctor asks only unmistakable questions of four templates.
COMPLAINT = "what brings you in today ?"
ONSET = "when did it start ?"
MEDICATIONS = "are you taking any medications ?"
SMOKING = "do you smoke ?"
ACI_DIALOGUES = {
    "D1": [COMPLAINT, ONSET, MEDICATIONS, SMOKING],
    "D2": [COMPLAINT, ONSET, SMOKING, MEDICATIONS],
    "D3": [COMPLAINT, MEDICATIONS, ONSET],
}


def tagged(questions: list[str]) -> str:
    return "\n".join(f"[doctor] okay . {q}\n[patient] well , i'm not sure ." for q in questions)


def write_aci_csv(folder: Path, dialogues: dict[str, list[str]] = ACI_DIALOGUES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dataset", "encounter_id", "dialogue", "note"])
        for encounter, questions in dialogues.items():
            writer.writerow(["aci", encounter, tagged(questions), "a note"])
    (folder / "train_metadata.csv").write_text("dataset,encounter_id,id\naci,D1,1\n")
    return path


def textgrid_long(tier: str, intervals: list[tuple[float, float, str]]) -> str:
    rows = "".join(
        f"        intervals [{i}]:\r\n            xmin = {a} \r\n            xmax = {b} \r\n"
        f'            text = "{t}" \r\n'
        for i, (a, b, t) in enumerate(intervals, start=1)
    )
    end = intervals[-1][1]
    return (
        'File type = "ooTextFile"\r\nObject class = "TextGrid"\r\n\r\nxmin = 0 \r\n'
        f"xmax = {end} \r\ntiers? <exists> \r\nsize = 1 \r\nitem []: \r\n    item [1]:\r\n"
        f'        class = "IntervalTier" \r\n        name = "{tier}" \r\n        xmin = 0 \r\n'
        f"        xmax = {end} \r\n        intervals: size = {len(intervals)} \r\n{rows}"
    )


def write_primock(folder: Path) -> None:
    """One consultation: the doctor's and the patient's tier files, interleaved by start time."""
    folder.mkdir(parents=True, exist_ok=True)
    doctor = [
        (0, 1.5, "Hello. What brings you in today?"),
        (1.5, 4, ""),
        (4, 6, "<UNIN/> When did it start?"),
    ]
    patient = [(0, 2, ""), (2, 3.5, 'My "chest" hurts.'.replace('"', '""')), (3.5, 6, "")]
    (folder / "day1_consultation01_doctor.TextGrid").write_text(textgrid_long("Speaker", doctor))
    (folder / "day1_consultation01_patient.TextGrid").write_text(textgrid_long("Patient", patient))
