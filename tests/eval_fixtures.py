"""A tiny hand-written answered dataset (THREADS and QA_PAIRS contracts) for the evaluation tests, and what
runs must agree on whichever way their calls were made, and a full disk for one model's calls."""

import errno
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.contracts import QA_PAIRS, THREADS
from tasks.evals.config import BatchSettings, EvalConfig, JudgeSpec, ModelSpec, RunConfig, RunOverrides
from tasks.llm.ledger import CallLedger

# The demo's offline models and judge: no keys, no network.
OFFLINE = EvalConfig(
    models=[ModelSpec(name="retrieval", model="threadmed/retrieval"), ModelSpec(model="threadmed/deferral")],
    judge=JudgeSpec(model="threadmed/overlap-judge"),
)


# thread_id -> (split, [(question, physician answer), ...])
THREAD_TEXTS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "ankle": (
        "test",
        [
            (
                "Twisted my ankle playing football yesterday, it is swollen and blue. Do I need an x-ray?",
                "If you cannot walk four steps or the bone at the back of the ankle is tender, get an x-ray. "
                "Otherwise rest, ice, compression and elevation for a few days.",
            ),
            (
                "I can walk but it hurts a lot. Can I take ibuprofen?",
                "Yes, ibuprofen with food for a few days is fine, unless you have kidney disease or "
                "stomach ulcers.",
            ),
            (
                "How long until I can play again?",
                "Usually two to six weeks. Return when you can hop on it without pain.",
            ),
        ],
    ),
    "headache": (
        "test",
        [
            (
                "I have had a headache every morning for two weeks, worse when I lie down. Should I worry?",
                "A new daily headache that is worse lying down needs a doctor's exam this week, to check "
                "the pressure in your head. Go to the emergency department if you get vomiting or vision "
                "changes.",
            ),
            (
                "It goes away after coffee. Could it be caffeine?",
                "Caffeine withdrawal is possible, but it does not explain the lying-down pattern, so "
                "still get seen.",
            ),
            (
                "My vision was blurry this morning for a minute.",
                "That is a warning sign. Please go to the emergency department today.",
            ),
            (
                "Okay, which hospital department do I ask for?",
                "Go to the emergency department and tell them about the headache and the blurry vision.",
            ),
        ],
    ),
    "rash": (
        "test",
        [
            (
                "Red itchy rash on both hands after I started a new dish soap.",
                "Sounds like contact dermatitis. Stop the soap, wear gloves and use a mild steroid cream.",
            ),
            ("Which steroid cream?", "Hydrocortisone 1% twice a day for a week."),
            (
                "It is cracking and bleeding now.",
                "Use a thick emollient too; if it looks infected see your GP.",
            ),
            ("What does infected look like?", "Yellow crusts, pus, spreading redness or fever."),
            ("Can I still go swimming?", "Chlorine can irritate it; wait until the skin has healed."),
            ("Thanks, anything else?", "Keep using gloves for wet work for a few weeks after it clears."),
        ],
    ),
    "cough": (
        "train",
        [
            (
                "Dry cough for three weeks after a cold, no fever. Is this normal?",
                "A cough after a viral infection can last up to eight weeks. See a doctor if you cough "
                "blood or lose weight.",
            ),
            ("Will honey help?", "Honey can soothe a cough in adults and children over one year."),
            ("Should I get a chest x-ray?", "Not yet, unless it lasts beyond eight weeks or you smoke."),
        ],
    ),
    "sprain": (
        "train",
        [
            (
                "Rolled my ankle running, swollen but I can walk. X-ray needed?",
                "If you can bear weight and the ankle bones are not tender, an x-ray is not needed. Rest "
                "and ice it.",
            ),
            ("Can I take ibuprofen for the ankle pain?", "Yes, ibuprofen with food is fine for a few days."),
            ("When can I run again?", "Usually in two to four weeks, when hopping is pain free."),
        ],
    ),
    "fever": (
        "val",
        [
            (
                "My toddler has a fever of 39C.",
                "Give paracetamol, fluids, and watch for a rash or drowsiness.",
            ),
            (
                "She is drowsy now.",
                "Drowsiness with fever needs urgent assessment: go to the emergency department.",
            ),
            ("Should I call an ambulance?", "If she is hard to wake, yes, call an ambulance now."),
        ],
    ),
}

STRATA = {3: "short", 4: "medium", 5: "medium"}


def write_dataset(
    build_dir: Path, texts: dict[str, tuple[str, list[tuple[str, str]]]] = THREAD_TEXTS
) -> Path:
    """Write `build_dir/dataset/answered/{threads,qa_pairs}.parquet`; return `build_dir`."""
    folder = build_dir / "dataset" / "answered"
    folder.mkdir(parents=True, exist_ok=True)
    start = datetime(2021, 3, 1, tzinfo=UTC)
    threads, pairs = [], []
    for index, (thread_id, (split, turns)) in enumerate(texts.items()):
        created = start + timedelta(days=index)
        threads.append(
            {
                "thread_id": thread_id,
                "created_utc": created,
                "op": f"u_{index:012x}",
                "n_questions": len(turns),
                "n_answered": len(turns),
                "n_orphans": 0,
                "stratum": STRATA.get(len(turns), "long"),
                "split": split,
                "jaccard": 0.2,
            }
        )
        for turn, (question, answer) in enumerate(turns):
            pairs.append(
                {
                    "thread_id": thread_id,
                    "turn": turn,
                    "question_id": f"{thread_id}-q{turn}",
                    "question": question,
                    "answer_id": f"{thread_id}-a{turn}",
                    "answer": answer,
                    "physician": "u_doc",
                    "physician_flair": "Physician",
                    "asked_utc": created + timedelta(hours=2 * turn),
                    "answered_utc": created + timedelta(hours=2 * turn + 1),
                }
            )
    pq.write_table(pa.Table.from_pylist(threads, schema=THREADS.schema), folder / "threads.parquet")
    pq.write_table(pa.Table.from_pylist(pairs, schema=QA_PAIRS.schema), folder / "qa_pairs.parquet")
    return build_dir


# Columns that tell how a call was made (when, how long, the provider's id, the price of its mode), not
# what it returned.
HOW_MADE = frozenset(
    {"latency_s", "started_at", "finished_at", "provider_response_id", "cost_usd", "input_cost_usd",
     "output_cost_usd"}
)  # fmt: skip


def outcomes(run_dir: Path, table: str) -> list[dict]:
    """A run table's rows without the columns of `HOW_MADE`: what single and batch calls must agree on."""
    rows = pq.read_table(run_dir / f"{table}.parquet").to_pylist()
    return [{k: v for k, v in row.items() if k not in HOW_MADE} for row in rows]


def run_single_then_batch(
    run: Callable[[Path, RunConfig], object], config: RunConfig, roles: list[str], into: Path
) -> None:
    """`run` the config into `into`/single, then with `roles` in batch mode (quick polls) into
    `into`/batch."""
    run(into / "single", config)
    quick = config.model_copy(update={"batch": BatchSettings(poll_interval_s=0.02)})
    run(into / "batch", quick.with_overrides(RunOverrides(batch=roles)))


def full_disk_for(model: str, monkeypatch) -> None:
    """Every ledger write of `model`'s calls raises as on a full disk (the reply was already paid for)."""
    write = CallLedger.write

    def write_or_fail(ledger, record):
        if record.model == model:
            raise OSError(errno.ENOSPC, "No space left on device")
        write(ledger, record)

    monkeypatch.setattr(CallLedger, "write", write_or_fail)
