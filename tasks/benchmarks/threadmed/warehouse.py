"""ThReadMed-QA's warehouse: its SQL and the sources it reads, the SQL parameters of its build settings, and
the build task."""

from datetime import UTC, datetime, time

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.threadmed import contracts
from tasks.benchmarks.threadmed.answer_roles import check_answer_roles, flair_roles
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.data.reddit.pseudonym_salt import PseudonymSalt
from tasks.data.sources import REDDIT, BenchmarkWarehouse, SqlFolders
from tasks.data.warehouse import build_database

WAREHOUSE = BenchmarkWarehouse(
    name="threadmed",
    contracts=contracts,
    sources=(REDDIT,),
    sql=SqlFolders(
        seeds=("seeds/threadmed",),
        models=("intermediate/threadmed", "marts/threadmed"),
        audits=("audits/threadmed",),
    ),
)


def sql_parameters(settings: BuildSettings, salt: str) -> dict[str, object]:
    """The DuckDB named parameters of the SQL project: one per rule of `settings`, and the salt.

    `keep_truncated` is an ingest setting and has no parameter. The window bounds become UTC instants.
    """
    return {
        "subreddit": settings.subreddit,
        "window_start": datetime.combine(settings.start, time(), tzinfo=UTC),
        "window_end": datetime.combine(settings.end, time(), tzinfo=UTC),
        "answer_roles": list(settings.answer_roles),
        "seed": settings.seed,
        "salt": salt,
        "min_words": settings.min_words,
        "min_questions": settings.min_questions,
        "min_answered_pairs": settings.min_answered_pairs,
        "max_removed_markers": settings.max_removed_markers,
        "min_clean_char_share": settings.min_clean_char_share,
        "train_share": settings.train_share,
        "val_share": settings.val_share,
    }


@task(cache_policy=NO_CACHE)
def build_warehouse(
    db_path: str, raw_files: dict[str, list[str]], settings: BuildSettings, salt: PseudonymSalt
) -> dict[str, int]:
    """Run every SQL model into db_path (one writer), audit each layer; return row counts per table."""
    check_answer_roles(settings.answer_roles, flair_roles())
    parameters = sql_parameters(settings, salt.secret.get_secret_value())
    return build_database(db_path, raw_files, parameters, WAREHOUSE)
