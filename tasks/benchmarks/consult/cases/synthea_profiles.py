"""Ages and sexes of Synthea patients, for consultation cases that want real demographics.

Reads a folder of Synthea FHIR R4 bundles with the shared FHIR reader (tasks/data/patients/); a patient's
age is taken at its last record date. The pool is sorted by patient id, so the same folder gives the same
cases.
"""

from collections import Counter
from pathlib import Path

from tasks.benchmarks.consult.cases.generate import Demographics
from tasks.data.patients.fhir import fhir_bundle_paths, record_from_bundle
from tasks.data.patients.records import checked_age, located, normalize_sex, read_json_file


def read_synthea_demographics(folder: Path) -> list[Demographics]:
    """Every patient of the folder's bundles with a known age and sex, in patient-id order."""
    profiles = []
    for path in fhir_bundle_paths(Path(folder)):
        with located(path):
            record = record_from_bundle(read_json_file(path), Counter())
            if record is None:
                continue
            age = checked_age(record.patient_id, record.birth_date, record.last_record_date)
        sex = normalize_sex(record.sex)
        if age is not None and sex in ("female", "male"):
            profiles.append(Demographics(record.patient_id, age, sex))
    if not profiles:
        raise ValueError(f"{folder} holds no Synthea FHIR bundle with a patient's birth date and sex")
    return sorted(profiles)
