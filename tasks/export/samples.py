"""A stored run as samples, the shape both exports read: one `ExportSample` per item a model was evaluated on
(ThReadMed-QA: a thread's turn in one condition; SNOMED: an interview; consultation: an episode).

Each benchmark turns its run folder into an `ExportedRun` (its folder's `export.py`, listed in the registry);
the Inspect log (inspect_log.py) and the flat table (flat.py) are written from it and from nothing else, so
the two exports always say the same thing.
"""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field

from tasks.core.preflight import UserError
from tasks.report.runs import RunManifest

Role = Literal["system", "user", "assistant"]


class Message(BaseModel, frozen=True):
    """One chat message as the model under test was sent it (its own replies are `assistant`)."""

    role: Role
    content: str


def chat(messages: list[dict[str, str]]) -> list[Message]:
    """OpenAI-style {"role", "content"} dicts (what the run sent) -> messages."""
    return [Message(role=m["role"], content=m["content"]) for m in messages]  # type: ignore[arg-type]


class RoleUsage(BaseModel):
    """Tokens and cost of one role's calls for one sample (model under test, judge, simulated patient)."""

    model: str  # the litellm model string the role called
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class ExportSample(BaseModel):
    """One evaluated item of one model. `scores` holds every score of the item, `score` the headline one;
    a score is None when it was not given (a failed call, an unparseable grade): `unscored` says why."""

    sample_id: str  # unique per model and epoch within the run
    item_id: str  # the thread or case
    turn: int | None = None  # ThReadMed-QA: the turn asked; None for benchmarks scored per conversation
    condition: str | None = None  # ThReadMed-QA: baseline | oracle
    epoch: int = 0  # the run's repeat index, from 0 as in the run tables
    status: str  # the answer's status as the run recorded it (ok, failed, not_run, answered, completed...)
    input: list[Message]  # what the model was sent on its first call for this item
    messages: list[Message]  # the whole conversation as the model saw it, its last reply included
    output: str | None  # the model's final reply; None when it gave none
    finish_reason: str | None = None
    target: str | list[str]  # the reference: the physician's answer, the gold codes or conditions
    score: float | None
    scores: dict[str, float | None]
    explanation: str | None = None  # the judge's reasons, or how the score was reached
    unscored: str | None = None  # why `score` is None
    usage: dict[str, RoleUsage] = Field(default_factory=dict)  # by role: model, judge, patient
    error: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)  # the benchmark's own facts of the item


class RunScore(BaseModel):
    """A model's score over the run, as its benchmark's report states it (the Inspect log's results)."""

    name: str  # mean, composite, a stage's name
    condition: str | None = None  # ThReadMed-QA: baseline | oracle
    value: float | None  # None: undefined over the run (no sample scored, a stage with no defined metric)


class RunScores(BaseModel):
    """Every model's run scores, and how they were computed (said in the log)."""

    note: str
    by_model: dict[str, list[RunScore]]


SAMPLE_MEAN = "the mean of the headline score over scored samples, per condition where there are conditions"


def sample_means(samples: dict[str, list[ExportSample]]) -> RunScores:
    """Each model's mean headline score over its scored samples, per condition: the run score of a benchmark
    whose report averages its items' scores (ThReadMed-QA's mean judge score, SNOMED's F1)."""
    by_model = {}
    for model, mine in samples.items():
        groups: dict[str | None, list[float]] = {}
        for sample in mine:
            scores = groups.setdefault(sample.condition, [])
            if sample.score is not None:
                scores.append(sample.score)
        by_model[model] = [
            RunScore(name="mean", condition=condition, value=sum(scores) / len(scores) if scores else None)
            for condition, scores in sorted(groups.items(), key=lambda item: str(item[0]))
        ]
    return RunScores(note=SAMPLE_MEAN, by_model=by_model)


class ModelRole(BaseModel):
    """A model of the run: the name its rows carry, the litellm model string, and the params sent."""

    name: str
    model: str
    api_base: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class ExportedRun(BaseModel):
    """A run's samples per model, and what its manifest says about how they were made and scored."""

    benchmark: str
    title: str
    run_id: str
    run_dir: Path
    created: datetime  # when the run's manifest was written
    dataset_dir: Path
    dataset_fingerprint: str | None
    scorer: str  # the name of the samples' score in the Inspect log (judge, codes, consult)
    score_name: str  # the headline score within `scores`
    models: list[ModelRole]
    roles: dict[str, ModelRole]  # the other roles: judge, patient
    samples: dict[str, list[ExportSample]]  # by model name, in the run's model order
    results: RunScores  # each model's scores over the run, as the benchmark's report computes them
    summary: dict[str, Any]  # the manifest's run summary (tasks/evals/outputs.py RunSummary)
    manifest: dict[str, Any]


def read_run_manifest(run_dir: Path) -> dict[str, Any]:
    """RUN_DIR/manifest.json; UserError (one line) when the run never finished."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise UserError(
            f"{run_dir} holds no finished run (no manifest.json): finish it (re-run its evaluate command), "
            "then export it",
            "RUN_DIR",
        )
    return json.loads(path.read_text(encoding="utf-8"))


def written_at(manifest: dict[str, Any], run_dir: Path) -> datetime:
    """When the run's manifest was written (its file's time for a manifest that does not say)."""
    if "written_at" in manifest:
        return datetime.fromisoformat(manifest["written_at"])
    return datetime.fromtimestamp((Path(run_dir) / "manifest.json").stat().st_mtime, UTC)


def model_roles(specs: list[str | dict[str, Any]], sent: dict[str, Any]) -> list[ModelRole]:
    """The config's model specs (a spec or a model string), each with the params the manifest's `sent`
    block recorded for it."""
    roles = []
    for spec in ({"model": s} if isinstance(s, str) else s for s in specs):
        name = spec.get("name") or spec["model"]
        params = sent.get(name, {}).get("params", spec.get("params") or {})
        roles.append(ModelRole(name=name, model=spec["model"], api_base=spec.get("api_base"), params=params))
    return roles


def usage(model: str, row: dict[str, Any], prefix: str = "") -> RoleUsage:
    """A role's usage from a run row's `<prefix>prompt_tokens`, `<prefix>completion_tokens` and
    `<prefix>cost_usd`."""
    return RoleUsage(
        model=model,
        input_tokens=row.get(f"{prefix}prompt_tokens") or 0,
        output_tokens=row.get(f"{prefix}completion_tokens") or 0,
        cost_usd=row.get(f"{prefix}cost_usd") or 0.0,
    )


def summed(model: str, rows: list[dict[str, Any]]) -> RoleUsage:
    """The usage of several calls of one role, added up."""
    parts = [usage(model, row) for row in rows]
    return RoleUsage(
        model=model,
        input_tokens=sum(p.input_tokens for p in parts),
        output_tokens=sum(p.output_tokens for p in parts),
        cost_usd=sum(p.cost_usd for p in parts),
    )


class RunFacts(NamedTuple):
    """What a benchmark's export says of its run, besides the samples."""

    benchmark: str
    title: str
    scorer: str
    score_name: str
    roles: tuple[str, ...]  # the config's other roles: judge, patient


def exported_run_of(
    manifest: RunManifest, facts: RunFacts, samples: dict[str, list[ExportSample]], results: RunScores
) -> ExportedRun:
    """An ExportedRun from a run's common manifest fields (tasks/report/runs.py), its samples and its run
    scores by model."""
    raw, config = manifest.raw, manifest.config
    sent = raw.get("sent", {})
    return ExportedRun(
        benchmark=facts.benchmark,
        title=facts.title,
        run_id=manifest.run_id,
        run_dir=Path(manifest.run_dir).resolve(),
        created=written_at(raw, manifest.run_dir),
        dataset_dir=manifest.case_set_dir,
        dataset_fingerprint=manifest.fingerprint,
        scorer=facts.scorer,
        score_name=facts.score_name,
        models=model_roles(config.get("models", []), sent.get("models", {})),
        roles={
            role: model_roles([config[role]], sent.get(role, {}))[0]
            for role in facts.roles
            if config.get(role)
        },
        samples={name: samples.get(name, []) for name in dict.fromkeys([*manifest.models, *samples])},
        results=results,
        summary=raw.get("summary", {}),
        manifest=raw,
    )
