"""The oracle data folder (issue 24's design): kept pairs as chat and alpaca JSONL per split, a dataset card,
and the design's manifest keys added to the run's manifest.json.

    DIR/chat/{train,validation,test}.jsonl    {"messages": [system, user, assistant], case_id, kind, topic,
                                               split}
    DIR/alpaca/{train,validation,test}.jsonl  {"instruction", "input", "output", case_id, kind, topic}
    DIR/README.md, DIR/manifest.json, DIR/ledger/ (the teacher's calls)

The system message (alpaca: the instruction) is oracle_patient_v1 with the case's record in its lay form:
exactly what the trained oracle is served with as an interview's patient prompt.
"""

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.loading import case_set_fingerprint, load_case_set
from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, record_text
from tasks.benchmarks.snomed.leak import LEAK_THRESHOLD, MAX_CODE_DIGITS, MIN_FUZZY_LENGTH
from tasks.benchmarks.snomed.oracle.config import (
    SPLITS,
    TEACHER_PROMPT,
    OracleDataConfig,
)
from tasks.benchmarks.snomed.oracle.contracts import ORACLE_PAIRS
from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER, OFFLINE_TEACHER_LABEL
from tasks.benchmarks.snomed.oracle.plan import load_cases, run_vocabulary
from tasks.benchmarks.snomed.oracle.validation import leak_check_facts, vocabulary_leak_names
from tasks.benchmarks.snomed.patient import Disclosure, leak_names_by_code, load_lexicon
from tasks.core.files import write_json_atomic, write_text_atomic
from tasks.llm.prompts import PromptTemplate, load_prompt

FORMATS = ("chat", "alpaca")
CARD_WIDTH = 104
KINDS = ("positive", "negative")


def served_system_prompt(prompt: PromptTemplate, case: Case, disclosure: Disclosure) -> str:
    """oracle_patient_v1 rendered with the case's record, as the interview renders its patient prompt."""
    return prompt.render(
        "system", disclosure_rule=DISCLOSURE_RULES[disclosure], record=record_text(case, "lay", disclosure)
    )


def chat_record(pair: dict[str, Any], system: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": pair["question"]},
            {"role": "assistant", "content": pair["answer"]},
        ],
        "case_id": pair["case_id"],
        "kind": pair["kind"],
        "topic": pair["topic"],
        "split": pair["split"],
    }


def alpaca_record(pair: dict[str, Any], system: str) -> dict[str, Any]:
    return {
        "instruction": system,
        "input": pair["question"],
        "output": pair["answer"],
        "case_id": pair["case_id"],
        "kind": pair["kind"],
        "topic": pair["topic"],
    }


def pair_counts(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Kept pairs per split and kind, rejected pairs per reason, and failed calls."""
    kept = Counter((p["split"], p["kind"]) for p in pairs if p["status"] == "kept")
    return {
        "kept": {split: {kind: kept[(split, kind)] for kind in KINDS} for split in SPLITS},
        "rejected": dict(sorted(Counter(p["reason"] for p in pairs if p["status"] == "rejected").items())),
        "failed": sum(p["status"] == "failed" for p in pairs),
        "cases": {split: len({p["case_id"] for p in pairs if p["split"] == split}) for split in SPLITS},
    }


def teacher_facts(config: OracleDataConfig) -> dict[str, Any]:
    """The teacher as called, and whether it is the offline one (then labelled as such everywhere)."""
    teacher = config.resolved(config.teacher)
    offline = teacher.model == OFFLINE_TEACHER
    return {
        "name": teacher.name,
        "model": teacher.model,
        "api_base": teacher.api_base,
        "params": teacher.params,
        "offline": offline,
        "label": OFFLINE_TEACHER_LABEL if offline else None,
    }


def dataset_manifest(
    config: OracleDataConfig,
    prompts: dict[str, str],
    counts: dict[str, Any],
    cases_dir: Path,
    leak_check: dict[str, Any],
) -> dict[str, Any]:
    """The design's manifest keys (issue24-design.md, "Oracle data folder"), and what the leak check read."""
    return {
        "teacher": teacher_facts(config),
        "prompts": prompts,
        "counts": {key: counts[key] for key in ("kept", "failed", "cases")},
        "rejected": counts["rejected"],
        "leak_check": leak_check,
        "cases": {"dir": str(Path(cases_dir).resolve()), "fingerprint": case_set_fingerprint(cases_dir)},
        "seed": config.seed,
        "positives_per_case": config.positives_per_case,
        "negatives_per_case": config.negatives_per_case,
        "disclosure": config.disclosure,
        "split": config.split,
    }


def leak_check_lines(leak_check: dict[str, Any]) -> list[str]:
    """The card's account of the leak check: which names, which codes, the digit-run rule."""
    conditions, shortest = f"{leak_check['conditions']:,}", leak_check["min_digit_run"]
    digits = f"any run of {shortest} or more digits (a SNOMED CT code has {shortest} to {MAX_CODE_DIGITS})"
    if not leak_check["names_checked"]:
        text = (
            "Leak check (`history` disclosure): an answer may name a diagnosis the patient was told, so "
            f"names are not checked; an answer holding {digits} was rejected as `leak`, which covers the "
            f"{conditions} codes of the run's vocabulary."
        )
    else:
        text = (
            "Leak check (`symptoms` disclosure): an answer was rejected as `leak` when it named any of the "
            f"{conditions} conditions of the run's vocabulary (every condition code of the Synthea modules, "
            "plus every condition of the source cases), whether or not the patient's record holds it: one of "
            f"their {leak_check['names']:,} names (the display without its tag, its core term such as "
            '"hypertension" for "Essential hypertension", the lay lexicon\'s extra names such as "covid"; '
            f"matched on content words, lightly stemmed, at rapidfuzz ratio >= {LEAK_THRESHOLD:g}, exactly "
            f"under {MIN_FUZZY_LENGTH} letters: the interviews' leak check) or one of their {conditions} "
            f"codes; or when it held {digits}."
        )
    return textwrap.wrap(text, width=CARD_WIDTH)


def dataset_card(manifest: dict[str, Any]) -> str:
    """README.md: Hugging Face front matter (configs per format and split), then what the data is."""
    files = [
        f"- config_name: {fmt}\n  data_files:\n"
        + "".join(f"  - split: {split}\n    path: {fmt}/{split}.jsonl\n" for split in SPLITS)
        for fmt in FORMATS
    ]
    teacher = manifest["teacher"]
    label = f" ({teacher['label']})" if teacher["offline"] else ""
    kept = manifest["counts"]["kept"]
    rows = [f"| {s} | {manifest['counts']['cases'][s]} | {kept[s]['positive']} | {kept[s]['negative']} |"
            for s in SPLITS]  # fmt: skip
    rejected = [f"- {reason}: {n}" for reason, n in manifest["rejected"].items()] or ["- none"]
    prompts = [f"- {version}: sha256 {sha}" for version, sha in manifest["prompts"].items()]
    failed = manifest["counts"]["failed"]
    incomplete = [f"**Incomplete: {failed} teacher calls failed; re-run the same command to finish.**", ""]
    return "\n".join([
        "---",
        "license: other",
        "language: [en]",
        "task_categories: [text-generation]",
        "tags: [medical, synthetic, patient-simulator, snomed-ct, synthea]",
        "configs:",
        *"".join(files).splitlines(),
        "---",
        "",
        "# SNOMED patient oracle: question/answer training pairs",
        "",
        *(incomplete if failed else []),
        "Doctor questions and lay patient answers grounded in synthetic (Synthea) patient records, to",
        "fine-tune a patient simulator (the SNOMED paper's oracle). Positive pairs ask about a condition or",
        "an observation the record holds; negative pairs about a condition it lacks, answered \"not sure\".",
        "Every pair passed validation: parseable, no leak in the answer (below), a positive answer does not",
        "say the patient does not know and a negative answer does.",
        "",
        *leak_check_lines(manifest["leak_check"]),
        "",
        f"- Teacher: `{teacher['model']}`{label}",
        f"- Source cases: `{manifest['cases']['dir']}`",
        f"  (cases.parquet sha256 {manifest['cases']['fingerprint']})",
        f"- Per case: up to {manifest['positives_per_case']} positive and {manifest['negatives_per_case']} "
        f"negative pairs; seed {manifest['seed']}; disclosure `{manifest['disclosure']}`",
        "- Split by patient (no patient in two splits): "
        + ", ".join(f"{split} {share:g}" for split, share in manifest["split"].items()),
        "- System message (alpaca: instruction): the served patient prompt `oracle_patient_v1` with the",
        "  record; serve the trained model with that prompt (`--patient-prompt` of an interview).",
        "",
        "| split | patients | positive | negative |",
        "|---|---|---|---|",
        *rows,
        "",
        "Rejected pairs by reason:",
        "",
        *rejected,
        "",
        "Prompts:",
        "",
        *prompts,
        "",
        "## Licence and intended use",
        "",
        "The records are synthetic (Synthea, Apache-2.0); the answers are the teacher's, under its",
        "provider's terms. For research on patient simulators and clinical-interview benchmarks only: not",
        "medical advice, and no statement about any real person.",
        "",
    ])  # fmt: skip


@task(name="write-oracle-dataset", cache_policy=NO_CACHE)
def write_oracle_dataset(run_dir: Path, cases_dir: Path, config: OracleDataConfig) -> Path:
    """RUN_DIR/oracle_pairs.parquet → chat/ and alpaca/ JSONL per split, README.md, manifest.json keys."""
    run_dir = Path(run_dir)
    pairs = pq.read_table(run_dir / f"{ORACLE_PAIRS.name}.parquet").to_pylist()
    prompt = load_prompt(ORACLE_PATIENT_PROMPT)
    systems = {
        c.case_id: served_system_prompt(prompt, c, config.disclosure) for c in load_case_set(cases_dir)
    }
    kept = [pair for pair in pairs if pair["status"] == "kept"]
    for fmt, make in (("chat", chat_record), ("alpaca", alpaca_record)):
        for split in SPLITS:
            lines = [json.dumps(make(p, systems[p["case_id"]]), ensure_ascii=False) for p in kept
                     if p["split"] == split]  # fmt: skip
            write_text_atomic(run_dir / fmt / f"{split}.jsonl", "".join(f"{line}\n" for line in lines))
    run_manifest_path = run_dir / "manifest.json"
    run_manifest = json.loads(run_manifest_path.read_text()) if run_manifest_path.exists() else {}
    prompts = {p.version: p.sha256 for p in (load_prompt(config.teacher_prompt or TEACHER_PROMPT), prompt)}
    # The names the plan gave the validation: the same cases, vocabulary and lexicon.
    leak_names = vocabulary_leak_names(
        run_vocabulary(load_cases(cases_dir, config.sample)), leak_names_by_code(load_lexicon())
    )
    leak_check = leak_check_facts(leak_names, config.disclosure)
    manifest = dataset_manifest(config, prompts, pair_counts(pairs), cases_dir, leak_check)
    write_json_atomic(run_manifest_path, {**run_manifest, **manifest})
    write_text_atomic(run_dir / "README.md", dataset_card(manifest))
    return run_dir
