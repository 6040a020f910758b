"""Publish a built dataset: marts -> Parquet, Table 1 statistics, funnel, figure, card, DuckDB views."""

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from prefect import task

from tasks.benchmarks.threadmed.contracts import QA_PAIRS, THREADS
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.core.provenance import git_commit, package_versions, utc_now
from tasks.core.tokens import TOKENIZER, count_tokens_batch
from tasks.data.contracts import Contract
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE
from tasks.report.figures import plain_text

DATASETS = ("full", "answered")
INGEST_STAGES = ("submissions", "comments")


# --- pure statistics ------------------------------------------------------------------------------


def _share(count: int, total: int) -> float:
    return round(100 * count / total, 1) if total else 0.0


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 1) if values else 0.0


def table1(
    n_questions: Sequence[int], n_answered: Sequence[int], question_tokens: Sequence[int],
    answer_tokens: Sequence[int], thread_tokens: Sequence[int],
) -> dict[str, Any]:  # fmt: skip
    """The paper's Table 1 for one dataset from per-thread counts and per-text token counts."""
    threads = len(n_questions)
    questions = sum(n_questions)
    answered = sum(n_answered)
    follow_ups = [n - 1 for n in n_questions]
    return {
        "threads": threads,
        "questions": questions,
        "answered_questions": answered,
        "answered_pct": _share(answered, questions),
        "follow_ups_min": min(follow_ups, default=0),
        "follow_ups_max": max(follow_ups, default=0),
        "follow_ups_mean": round(statistics.fmean(follow_ups), 2) if follow_ups else 0.0,
        "follow_ups_median": float(statistics.median(follow_ups)) if follow_ups else 0.0,
        "threads_exactly_3_turns": sum(n == 3 for n in n_questions),
        "threads_exactly_3_turns_pct": _share(sum(n == 3 for n in n_questions), threads),
        "threads_4plus_turns": sum(n >= 4 for n in n_questions),
        "threads_4plus_turns_pct": _share(sum(n >= 4 for n in n_questions), threads),
        "threads_5plus_turns": sum(n >= 5 for n in n_questions),
        "threads_5plus_turns_pct": _share(sum(n >= 5 for n in n_questions), threads),
        "question_tokens_mean": _mean(question_tokens),
        "answer_tokens_mean": _mean(answer_tokens),
        "thread_tokens_mean": _mean(thread_tokens),
    }


def qa_pairs_table1(qa_pairs: pa.Table) -> dict[str, Any]:
    """The paper's Table 1 of one dataset from its question-answer pairs alone (columns thread_id,
    question, answer; a null answer is an orphan question): a rebuild's and a release's alike."""
    questions = qa_pairs.column("question").to_pylist()
    answers = qa_pairs.column("answer").to_pylist()
    question_tokens = count_tokens_batch(questions)
    answer_tokens = count_tokens_batch(answers)
    per_thread: dict[str, list[int]] = {}  # thread -> [questions, answered, tokens]
    for thread_id, answer, q_tokens, a_tokens in zip(
        qa_pairs.column("thread_id").to_pylist(), answers, question_tokens, answer_tokens, strict=True
    ):
        counts = per_thread.setdefault(thread_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += answer is not None
        counts[2] += q_tokens + a_tokens
    answered_tokens = [t for t, a in zip(answer_tokens, answers, strict=True) if a is not None]
    threads = list(per_thread.values())
    return table1(
        [counts[0] for counts in threads],
        [counts[1] for counts in threads],
        question_tokens,
        answered_tokens,
        [counts[2] for counts in threads],
    )


def dataset_statistics(threads: pa.Table, qa_pairs: pa.Table) -> dict[str, Any]:
    """Table 1 plus strata and split counts of one published dataset."""
    stats = qa_pairs_table1(qa_pairs)
    for column in ("stratum", "split"):
        values = threads.column(column).to_pylist()
        stats[f"{column}_counts"] = {value: values.count(value) for value in sorted(set(values))}
    return stats


def ingest_funnel_rows(receipts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Funnel rows of the ingest, per dump kind: lines dropped, quarantined and kept, by reason.

    As in every stage of stats_funnel, the reason rows add up to the stage's input (the lines read) and
    the row with a null reason is what the stage passed on.
    """
    rows: list[dict[str, Any]] = []
    for order, kind in enumerate(INGEST_STAGES):
        counts: Counter[str] = Counter()
        for receipt in receipts:
            summary = receipt["summary"]
            if summary["kind"] == kind:
                counts.update({f"dropped: {k}": v for k, v in summary["dropped"].items()})
                counts.update({f"quarantined: {k}": v for k, v in summary["rejected"].items()})
                counts["kept"] += summary["kept"]
        stage = f"ingest {kind}"
        rows.append({"stage_order": order, "stage": stage, "reason": None, "count_rows": counts["kept"]})
        rows += [{"stage_order": order, "stage": stage, "reason": reason, "count_rows": count}
                 for reason, count in sorted(counts.items())]  # fmt: skip
    return rows


# --- I/O ------------------------------------------------------------------------------------------


def read_mart(connection: duckdb.DuckDBPyConnection, table: str, contract: Contract) -> pa.Table:
    """A mart as an Arrow table checked against its contract, in key order (same inputs, same bytes)."""
    order = ", ".join(contract.key)
    arrow = connection.sql(f"select {', '.join(contract.columns)} from {table} order by {order}").arrow()
    if isinstance(arrow, pa.RecordBatchReader):
        arrow = arrow.read_all()
    if arrow.schema != contract.schema:
        arrow = arrow.cast(contract.schema)
    return arrow


def plot_funnel(funnel: Sequence[dict[str, Any]], path: Path) -> None:
    """Horizontal bars: rows kept after every stage (the stage totals of funnel.json)."""
    totals = [row for row in funnel if row["reason"] is None]
    totals.sort(key=lambda row: row["stage_order"])
    labels = [plain_text(row["stage"]) for row in totals]
    counts = [row["count_rows"] for row in totals]
    # Imported here: matplotlib is a third of a second of every `threadmed build`'s start, for this one plot.
    from matplotlib.figure import Figure

    # The object API needs no GUI backend and is safe in worker threads.
    figure = Figure(figsize=(8, 0.45 * len(labels) + 1.2))
    axes = figure.subplots()
    bars = axes.barh(labels[::-1], counts[::-1], color="#4c72b0")
    axes.bar_label(bars, labels=[f"{c:,}" for c in counts[::-1]], padding=3, fontsize=8)
    axes.set_xscale("log")
    axes.set_xlabel("rows kept (log scale)")
    axes.set_title("ThReadMed-QA build funnel")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def privacy_notice(pseudonyms: dict[str, Any]) -> str:
    """The card's Privacy section: what is masked, and whether the pseudonyms are safe to publish."""
    masking = (
        "Usernames, and mentions of users (`u/name`), are replaced by `u_` plus 12 hex digits of a salted\n"
        "sha256; URLs are removed and e-mail addresses and phone numbers masked."
    )
    if pseudonyms["publishable"]:
        fingerprint = pseudonyms["salt_fingerprint"]
        return f"{masking} The salt is secret and not\npublished (its fingerprint is `{fingerprint}`)."
    return (
        "**WARNING: NOT SAFE TO PUBLISH.** This build used the public default salt, so anyone can\n"
        "recover a username from its pseudonym by hashing candidate names. Rebuild with a secret salt\n"
        f"(`{SALT_VARIABLE}`) before sharing it.\n\n{masking}"
    )


# The terms every copy of a build is shared under: at least as strict as the ThReadMed-QA public release's
# as issue 25 lists them (research use only, no re-identification or linking back to Reddit, no clinical
# use, removal on request; the paper itself states none), with what a rebuild from the dumps needs on top.
TERMS_OF_USE = """By using this dataset you accept these terms; share it only under them, with this card. They
are at least as strict as those of the ThReadMed-QA public release; where the release's own terms are
stricter, they apply to this build too.

1. **Research use only.** Use it to study and evaluate language models and medical dialogue, not in a
   product or service, and not to train systems deployed to answer people's health questions.
2. **No clinical use.** The answers are comments on a public forum, not medical advice and not a clinical
   record. Do not use the data, or a model chosen or tuned on it, to diagnose, treat or advise anyone.
3. **No re-identification.** Do not try to find out who wrote a post or a comment, to reverse the
   pseudonyms, or to link a row to other data about a person.
4. **No linking back to Reddit.** Do not use the ids (`thread_id`, `question_id`, `answer_id` are Reddit
   ids) or the texts to look up, link to or show the original posts or their authors. Quote no text
   verbatim in a publication: paraphrase examples so that a web search cannot find them.
5. **Removal on request.** When a person asks for their content to be removed, or it was removed from the
   ThReadMed-QA release, delete the thread from every copy you hold and from what you derived from it
   (splits, samples, model outputs, figures), and tell whoever you shared it with.
6. The texts remain their authors'; Reddit's user agreement and data terms also apply."""


# How a user with a copy of the ThReadMed-QA release compares it with a build (tasks/benchmarks/threadmed/
# release.py reads the release in this layout).
RELEASE_COMPARISON = """The ThReadMed-QA public release (its paper's Table 1: answered, 2,437 threads and
8,204 questions; full, 9,741 threads, 37,191 questions, 58.1% answered) is shared by its authors under
their terms. If you have a copy, compare it with this build without downloading anything:

```bash
threadmed compare-release path/to/this/build --release path/to/release
```

It prints Table 1 of both side by side (threads, questions, answered share, turns per thread, token
lengths, with the same tokenizer) and how many threads each holds that the other does not. The release
folder must be laid out as `answered/qa_pairs.parquet` (and optionally `full/qa_pairs.parquet`; CSV or
JSON lines also do), one row per question with `thread_id`, `turn`, `question` and `answer` (empty for
an unanswered question). Threads that the release lacks may have been removed on request: drop them
(term 5)."""


def repaired_values_sentence(inputs: Sequence[dict[str, Any]]) -> str:
    """What the card says of the values of kept records that lost part of their value when cast to their
    column's type (nulled, characters replaced, a number cut; build.json names them per dump)."""
    repaired: Counter[str] = Counter()
    for dump in inputs:
        repaired.update(dump["repaired_values"])
    if not repaired:
        return "No value of a kept record lost any part when cast to its column's type."
    counts = ", ".join(f"`{column}` {count:,}" for column, count in sorted(repaired.items()))
    return (
        f"Values of kept records that lost part of their value when cast to their column's type (nulled, "
        f"characters replaced, a number cut), by column: {counts}; per dump in `build.json`, "
        "`repaired_values`."
    )


def dataset_card(stats: dict[str, Any], settings: BuildSettings, build: dict[str, Any]) -> str:
    """README.md with the YAML header Hugging Face datasets reads (configs point at the Parquet files)."""
    full, answered = stats["full"], stats["answered"]
    header = "\n".join([
        "---",
        "pretty_name: ThReadMed-QA (rebuilt)",
        "language: [en]",
        "license: other",
        "license_name: threadmed-qa-research-terms",
        "license_details: research use only; no clinical use; no re-identification or linking back to "
        "Reddit; removal on request (see Terms of use)",
        "task_categories: [question-answering, text-generation]",
        "tags: [medical, multi-turn, reddit, askdocs, patient-physician]",
        "size_categories: [1K<n<10K]",
        "configs:",
        *[line for name in DATASETS for line in (
            f"- config_name: {name}",
            "  data_files:",
            f"  - {{split: threads, path: dataset/{name}/threads.parquet}}",
            f"  - {{split: qa_pairs, path: dataset/{name}/qa_pairs.parquet}}",
        )],
        "---",
    ])  # fmt: skip
    rows = [
        ("Threads", "threads"), ("Questions", "questions"), ("Answered questions", "answered_questions"),
        ("Answered (%)", "answered_pct"), ("Follow-ups min / max", None), ("Follow-ups mean / median", None),
        ("Threads with >= 4 turns (%)", "threads_4plus_turns_pct"),
        ("Threads with >= 5 turns (%)", "threads_5plus_turns_pct"),
        ("Question tokens (mean)", "question_tokens_mean"), ("Answer tokens (mean)", "answer_tokens_mean"),
        ("Thread tokens (mean)", "thread_tokens_mean"),
    ]  # fmt: skip

    def cell(data: dict[str, Any], label: str, key: str | None) -> str:
        if key:
            return f"{data[key]:,}"
        if "min" in label:
            return f"{data['follow_ups_min']} / {data['follow_ups_max']}"
        return f"{data['follow_ups_mean']} / {data['follow_ups_median']}"

    table = "\n".join(
        ["| | full | answered |", "|---|---:|---:|"]
        + [f"| {label} | {cell(full, label, key)} | {cell(answered, label, key)} |" for label, key in rows]
    )
    return f"""{header}

# ThReadMed-QA, rebuilt from Pushshift r/{settings.subreddit} dumps

Multi-turn patient-physician conversations: an original post (question 0), the original poster's
follow-up questions, and the answers of commenters whose flair shows a verified role in
{", ".join(settings.answer_roles)}. Built by the ThReadMed-QA pipeline at commit `{build["git_commit"]}`
on {build["built_at"]}, posts created in [{settings.start}, {settings.end}) UTC.

## Subsets

- `full`: every selected branch with at least {settings.min_questions} questions, unanswered (orphan)
  questions included (`answer` is null for them).
- `answered`: trailing orphans trimmed; only threads with no orphan left and at least
  {settings.min_answered_pairs} question-answer pairs. This is the evaluation benchmark.

Each has `threads.parquet` (one row per thread: counts, length stratum, OP-grouped split) and
`qa_pairs.parquet` (one row per turn). Splits are assigned per original poster from seed
{settings.seed}, so one person's threads never straddle two splits.

## Statistics (tokens: tiktoken `{TOKENIZER}`)

{table}

How many rows every stage kept and dropped, and why, is in `funnel.json` and `funnel.png`.
{repaired_values_sentence(build["inputs"])}

## Terms of use

{TERMS_OF_USE}

## Privacy

{privacy_notice(build["pseudonyms"])}

## Comparing with the ThReadMed-QA release

{RELEASE_COMPARISON}

## Reading it

`dataset.duckdb` holds views over these files; open it from this folder (`duckdb dataset.duckdb`),
since the views use relative paths.
"""


def write_views(database: Path) -> None:
    """A DuckDB file of views over the published files, with paths relative to its folder."""
    database.unlink(missing_ok=True)
    with duckdb.connect(str(database)) as connection:
        # Views bind their files when created; relative paths then resolve against the dataset folder.
        connection.execute("set file_search_path = ?", [str(database.parent.resolve())])
        for name in DATASETS:
            for table in ("threads", "qa_pairs"):
                relative = f"dataset/{name}/{table}.parquet"
                connection.execute(f"create view {name}_{table} as select * from read_parquet('{relative}')")
        connection.execute("create view funnel as select * from read_json_auto('funnel.json')")


@task(name="publish-dataset")
def publish_dataset(
    warehouse: str,
    out_dir: str,
    receipts: list[dict[str, Any]],
    settings: BuildSettings,
    pseudonyms: dict[str, Any],
) -> dict[str, Any]:
    """Warehouse marts -> dataset/ Parquet, stats.json, funnel.json/png, README.md card, dataset.duckdb.

    `pseudonyms` is what may be said about the salt (PseudonymSalt.describe()), never the salt itself.
    """
    out = Path(out_dir)
    stats: dict[str, Any] = {"tokenizer": TOKENIZER}
    with duckdb.connect(warehouse, read_only=True) as connection:
        for name in DATASETS:
            folder = out / "dataset" / name
            folder.mkdir(parents=True, exist_ok=True)
            threads = read_mart(connection, f"{name}_threads", THREADS)
            qa_pairs = read_mart(connection, f"{name}_qa_pairs", QA_PAIRS)
            pq.write_table(threads, folder / "threads.parquet")
            pq.write_table(qa_pairs, folder / "qa_pairs.parquet")
            stats[name] = dataset_statistics(threads, qa_pairs)
        sql_funnel = connection.sql(
            "select stage_order, stage, reason, count_rows from stats_funnel order by stage_order, reason"
        ).fetchall()
    funnel = ingest_funnel_rows(receipts) + [
        {"stage_order": order + len(INGEST_STAGES), "stage": stage, "reason": reason, "count_rows": count}
        for order, stage, reason, count in sql_funnel
    ]
    build = {
        "built_at": utc_now(),
        "git_commit": git_commit(),
        "settings": settings.model_dump(mode="json"),
        "pseudonyms": pseudonyms,
        "inputs": [
            {
                "source_file": r["source_file"],
                "truncated": r["summary"]["truncated"],
                "repaired_values": r["summary"]["repaired"],
                **r["fingerprint"],
            }
            for r in receipts
        ],
        "packages": package_versions(),
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=2))
    (out / "funnel.json").write_text(json.dumps(funnel, indent=2))
    (out / "build.json").write_text(json.dumps(build, indent=2))
    plot_funnel(funnel, out / "funnel.png")
    (out / "README.md").write_text(dataset_card(stats, settings, build))
    write_views(out / "dataset.duckdb")
    return {"out_dir": str(out), "stats": stats, "funnel": funnel}


# --- versions: scheduled rebuilds publish into versions/<id>/ and move the `latest` pointer ----------


def version_id(receipts: Sequence[dict[str, Any]], settings: BuildSettings, salt_fingerprint: str) -> str:
    """A version named by what it was built from: the same dumps, settings and salt give the same id."""
    inputs = sorted((r["source_file"], r["fingerprint"]["sha256"]) for r in receipts)
    payload = json.dumps(
        {
            "inputs": inputs,
            "settings": settings.model_dump(mode="json"),
            "salt_fingerprint": salt_fingerprint,
        },
        sort_keys=True,
    )
    return "v-" + hashlib.sha256(payload.encode()).hexdigest()[:12]


def dataset_folder(
    out_dir: str,
    receipts: Sequence[dict[str, Any]],
    settings: BuildSettings,
    salt_fingerprint: str,
    versioned: bool,
) -> str:
    """Where this build publishes: `out_dir` itself, or `out_dir/versions/<id>` for versioned rebuilds."""
    if not versioned:
        return out_dir
    return str(Path(out_dir) / "versions" / version_id(receipts, settings, salt_fingerprint))


@task(name="promote-latest")
def promote_latest(root: str, version: str) -> str:
    """Point `root/latest` (a symlink, and the LATEST file for systems without them) at a version."""
    base = Path(root)
    temporary = base / f".latest-{version}"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(Path("versions") / version, target_is_directory=True)
    temporary.replace(base / "latest")  # atomic: readers see the old or the new version, never neither
    (base / "LATEST").write_text(version + "\n")
    index = base / "versions.json"
    history = json.loads(index.read_text()) if index.exists() else []
    history = [entry for entry in history if entry["version"] != version]
    history.append({"version": version, "published_at": utc_now()})
    index.write_text(json.dumps(history, indent=2))
    return str(base / "latest")
