"""Evaluation benchmark: 5 models x ~240 threads x 2 conditions, answered and judged, against a test server.

The scriptable OpenAI-compatible server (tests/llm_server.py) runs as a subprocess with a fixed latency
(tests/perf/calls.py), and every model and the judge share one provider limit C. The lower bound of the
wall time is the larger of (total calls x latency / C) and the longest chain of dependent calls (a
thread's turns, then its judgments). Per call, the time a slot is held beyond the server's latency splits
into the call layer (litellm and the HTTP client, measured around each call) and orchestration
(everything else: Prefect tasks, ledger, limiter hand-offs). Targets: wall within 1.15x of the bound,
orchestration under 10 ms.
"""

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flows.evaluate_models import evaluate_models
from tasks.core.runners import RunnerSettings
from tasks.evals.config import EvalConfig, EvaluationSettings, JudgeSpec, ModelSpec, SampleSpec
from tasks.llm.request import ProviderLimits
from tests.eval_fixtures import write_dataset
from tests.perf.calls import served, slot_split, slot_split_line, timed_calls

SEED = 11
LATENCY_S = 0.2
# 16 slots at 200 ms is 80 calls/s: about what one Python process drives through litellm (~4 ms of
# CPU per call) and Prefect's local API records (~30 task runs/s) on the 2-core reference machine.
CONCURRENCY = 16
MODELS = 5
N_THREADS = 240
# Share of threads with 3, 4, ... 9 QA pairs, as in the answered dataset.
THREAD_LENGTHS = {3: 0.55, 4: 0.18, 5: 0.12, 6: 0.07, 7: 0.04, 8: 0.02, 9: 0.02}
TARGET_RATIO = 1.15
TARGET_OVERHEAD_MS = 10.0
WORD_TEXT = (
    "pain swelling rash fever cough headache knee ankle chest stomach weeks days since started worse better "
    "doctor ibuprofen rest ice blood test scan normal sore tired dizzy sleep eat walk night morning"
)
WORDS = WORD_TEXT.split()


def synthetic_threads(rng: random.Random) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Test-split threads with the dataset's length mix and questions/answers of realistic length."""
    lengths = rng.choices(list(THREAD_LENGTHS), weights=list(THREAD_LENGTHS.values()), k=N_THREADS)

    def text(words: int) -> str:
        return " ".join(rng.choices(WORDS, k=words))

    return {f"t{i:04d}": ("test", [(text(100), text(50)) for _ in range(n)]) for i, n in enumerate(lengths)}


def settings(
    dataset: Path,
    run_dir: Path,
    url: str,
    limit: int | None = None,
    max_cost_usd: float | None = None,
    max_concurrency: int = CONCURRENCY,
) -> EvaluationSettings:
    return EvaluationSettings(
        dataset_dir=dataset,
        run_dir=run_dir,
        config=EvalConfig(
            models=[
                ModelSpec(name=f"m{i}", model=f"openai/m{i}", api_base=url) for i in range(1, MODELS + 1)
            ],
            judge=JudgeSpec(name="judge", model="openai/judge", api_base=url),
            providers={"openai": ProviderLimits(max_concurrency=max_concurrency)},
            sample=SampleSpec(limit=limit),
            max_cost_usd=max_cost_usd,
        ),
    )


def main(
    out_dir: Path,
    runner: RunnerSettings | None = None,
    max_cost_usd: float | None = None,
    max_concurrency: int = CONCURRENCY,
) -> dict[str, Any]:
    """The run's timings on `runner` (threads by default), capped at `max_cost_usd` if given, the provider
    limit `max_concurrency` as the run's config states it; the bound is CONCURRENCY calls in flight."""
    threads = synthetic_threads(random.Random(SEED))
    dataset = write_dataset(out_dir / "build", threads)
    run_dir = out_dir / f"run-{time.strftime('%Y%m%dT%H%M%S')}"
    with served(LATENCY_S) as url:
        timings = timed_run(dataset, run_dir, url, runner, max_cost_usd, max_concurrency)
    longest = max(len(turns) for _, turns in threads.values())
    bound_s = max(timings["calls"] * LATENCY_S / CONCURRENCY, 2 * longest * LATENCY_S)
    # Inference calls' own latencies, measured around litellm.completion inside the provider slot.
    latencies = pq.read_table(run_dir / "responses.parquet", columns=["latency_s"])["latency_s"].to_pylist()
    return {
        "models": MODELS,
        "threads": N_THREADS,
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        **timings,
        "bound_s": bound_s,
        "ratio": timings["wall_s"] / bound_s,
        **slot_split(timings["wall_s"], timings["calls"], LATENCY_S, CONCURRENCY, latencies),
        "target_ratio": TARGET_RATIO,
        "target_overhead_ms": TARGET_OVERHEAD_MS,
    }


def timed_run(
    dataset: Path,
    run_dir: Path,
    url: str,
    runner: RunnerSettings | None,
    max_cost_usd: float | None,
    max_concurrency: int,
) -> dict[str, Any]:
    """Warm up on one thread, then time the whole evaluation."""
    warm_up_dir = run_dir.with_name("warm-up")
    shutil.rmtree(warm_up_dir, ignore_errors=True)  # a warm-up replayed from its ledger would call nothing
    warm_up = settings(dataset, warm_up_dir, url, 1, max_cost_usd, max_concurrency)
    return timed_calls(
        lambda: evaluate(warm_up, runner),
        lambda: evaluate(settings(dataset, run_dir, url, None, max_cost_usd, max_concurrency), runner),
        url,
    )


def evaluate(run: EvaluationSettings, runner: RunnerSettings | None = None) -> None:
    """The evaluate-models flow without its report (timed by the report benchmark)."""
    evaluate_models(
        dataset_dir=str(run.dataset_dir),
        run_dir=str(run.run_dir),
        config=run.config,
        runner=runner,
        report=False,
    )


def summary_lines(results: dict[str, Any]) -> list[str]:
    return [
        f"{results['models']} models x {results['threads']} threads x 2 conditions + judging: "
        f"{results['calls']:,} calls at {results['latency_s'] * 1000:.0f} ms, concurrency "
        f"{results['concurrency']} (max in flight {results['max_in_flight']}); "
        f"start-up {results['startup_s']:.0f} s",
        f"wall {results['wall_s']:.1f} s vs bound {results['bound_s']:.1f} s: {results['ratio']:.2f}x "
        f"(target <= {results['target_ratio']}x)",
        slot_split_line(results),
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/evaluation"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
