"""Synthea's CSV export folder (`output/csv/`, Synthea's column names) -> PatientRecords.

DuckDB reads every file as text (Synthea writes dates both as `2019-02-17` and `2019-02-17T05:07:38Z`);
only the latest observation rows per patient and code, at the reference date, leave DuckDB. Conditions
of another code system than SNOMED CT are skipped and counted. An export with no medicine (or allergy) row
for anyone, its file missing or empty, records none of them: None, not an empty list (`section_rows`).
"""

from collections import Counter
from datetime import date
from pathlib import Path

import duckdb

from tasks.data.patients.records import PatientRecord, SourceError
from tasks.data.patients.tables import (
    RecordRows,
    ensure_table,
    load_table_file,
    offline_duckdb,
    records_from_rows,
    rows_by_patient,
    section_rows,
)

# The columns each file must give (optional ones are added as nulls when an older Synthea left them out).
SYNTHEA_CSV_COLUMNS = {
    "patients": ("Id", "BIRTHDATE", "GENDER"),
    "encounters": ("Id", "START", "PATIENT"),
    "conditions": ("START", "STOP", "PATIENT", "SYSTEM", "CODE", "DESCRIPTION"),
    "observations": ("DATE", "PATIENT", "CATEGORY", "CODE", "DESCRIPTION", "VALUE", "UNITS"),
    "medications": ("START", "STOP", "PATIENT", "CODE", "DESCRIPTION"),
    "allergies": ("START", "STOP", "PATIENT", "CODE", "DESCRIPTION"),
}
REQUIRED_FILES = ("patients", "conditions")
NO_SNOMED_CODE = "conditions of another code system than SNOMED CT"

PATIENTS_SQL = """
with

record_dates as (
    select PATIENT as patient_id, START as day from encounters
    union all select PATIENT, START from conditions
    union all select PATIENT, DATE from observations
    union all select PATIENT, START from medications
    union all select PATIENT, START from allergies
),

last_dates as (
    select patient_id, max(try_cast(left(day, 10) as date)) as last_record_date
    from record_dates
    group by patient_id
),

patient_rows as (
    select
        patients.Id as patient_id,
        try_cast(left(patients.BIRTHDATE, 10) as date) as birth_date,
        patients.GENDER as sex,
        last_dates.last_record_date,
        coalesce($reference_date, last_dates.last_record_date) as reference_date
    from patients
    left join last_dates on last_dates.patient_id = patients.Id
)

select * from patient_rows
"""

CONDITIONS_SQL = """
select
    PATIENT as patient_id,
    CODE as code,
    coalesce(DESCRIPTION, '') as display,
    try_cast(left(START, 10) as date) as onset,
    try_cast(left(STOP, 10) as date) as stop
from conditions
where SYSTEM is null or SYSTEM in ('SNOMED-CT', 'SNOMED CT', 'http://snomed.info/sct')
order by all
"""

OTHER_SYSTEM_CONDITIONS_SQL = """
select count(*) from conditions where SYSTEM not in ('SNOMED-CT', 'SNOMED CT', 'http://snomed.info/sct')
"""

# Every row of the latest date per patient and code (same-day ties are settled in Python, by value).
LATEST_OBSERVATIONS_SQL = """
with

dated as (
    select
        observations.PATIENT as patient_id,
        observations.CODE as code,
        coalesce(observations.DESCRIPTION, observations.CODE) as display,
        observations.VALUE as value,
        nullif(observations.UNITS, '') as unit,
        try_cast(left(observations.DATE, 10) as date) as observed_on,
        observations.CATEGORY as category,
        patient_rows.reference_date
    from observations
    inner join patient_rows on patient_rows.patient_id = observations.PATIENT
    where observations.VALUE is not null and observations.VALUE <> ''
),

latest as (
    select patient_id, code, display, value, unit, observed_on, category
    from dated
    where reference_date is null or observed_on is null or observed_on <= reference_date
    qualify observed_on = max(observed_on) over (partition by patient_id, code)
)

select * from latest order by all
"""

ITEMS_SQL = """
select
    PATIENT as patient_id,
    CODE as code,
    coalesce(DESCRIPTION, CODE) as display,
    try_cast(left(START, 10) as date) as start,
    try_cast(left(STOP, 10) as date) as stop
from {table}
order by all
"""


def load_synthea_csv(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Load the export's files as text tables named after them; missing optional files become empty tables."""
    for name, columns in SYNTHEA_CSV_COLUMNS.items():
        if not load_table_file(con, name, folder, all_varchar=True) and name in REQUIRED_FILES:
            raise SourceError(f"no {name}.csv: not a Synthea CSV export (patients.csv, conditions.csv, ...)")
        ensure_table(con, name, [f"{column} varchar" for column in columns])


def read_synthea_csv_records(
    folder: Path, reference_date: date | None, skipped: Counter[str]
) -> list[PatientRecord]:
    """A Synthea CSV export folder -> one PatientRecord per row of patients.csv, sorted by patient id, its
    observations the latest per code at the reference date (None: at each patient's last record date);
    conditions of other code systems are counted in `skipped`."""
    with offline_duckdb() as con:
        load_synthea_csv(con, folder)
        if other_system := con.execute(OTHER_SYSTEM_CONDITIONS_SQL).fetchall()[0][0]:
            skipped[NO_SNOMED_CODE] += other_system
        con.execute(f"create table patient_rows as {PATIENTS_SQL}", {"reference_date": reference_date})
        patients = con.execute(
            "select patient_id, birth_date, sex, last_record_date from patient_rows"
        ).fetchall()
        rows = RecordRows(
            conditions=rows_by_patient(con.execute(CONDITIONS_SQL).fetchall()),
            observations=rows_by_patient(con.execute(LATEST_OBSERVATIONS_SQL).fetchall()),
            medications=section_rows(
                con, ITEMS_SQL.format(table="medications"), "select count(*) from medications"
            ),
            allergies=section_rows(
                con, ITEMS_SQL.format(table="allergies"), "select count(*) from allergies"
            ),
        )
    return records_from_rows(patients, rows)
