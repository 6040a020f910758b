"""Evaluation settings: the YAML config with its named roles, and the per-run overrides.

Configuration flows one way: YAML (or deployment parameters) -> `EvaluationSettings` in the flow
signature -> jobs with explicit settings. See deployments/eval.example.yaml for every field.
"""

from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, Self

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator
from typing_extensions import TypeVar

from tasks.core.files import safe_load_yaml
from tasks.core.preflight import UserError, validation_message
from tasks.core.strict import StrictModel, unknown_name
from tasks.llm.offline import is_offline
from tasks.llm.providers import batch_capable, check_batch_capable
from tasks.llm.request import (
    CallMode,
    CallOptions,
    ChatRequest,
    Prices,
    ProviderLimits,
    RetryPolicy,
    assumed_reply_tokens,
)

Condition = Literal["baseline", "oracle"]
# A spending cap in USD: a finite amount, none below 0. An infinite cap (`inf`, `1e400`) would be no cap at
# all and `nan` one no spend compares with, so both are refused rather than read as "no cap".
CostCap = Annotated[float | None, Field(ge=0, allow_inf_nan=False)]

# Request params that are numbers in every provider's API. `params` is free-form (litellm sends it as
# given), so no type reads these: a YAML `yes` or `no` there would be sent as a boolean, which a provider
# takes as 1 or 0 or refuses call by call. Params that are booleans (`logprobs`) or objects are not checked.
NUMERIC_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "top_logprobs",
    }
)


def _numeric_params_are_numbers(params: dict[str, Any]) -> dict[str, Any]:
    """`params` unchanged when each of its `NUMERIC_PARAMS` is a number or null (null removes a default)."""
    for name in sorted(NUMERIC_PARAMS & params.keys()):
        value = params[name]
        if isinstance(value, bool):
            raise ValueError(
                f"{name}: {value} is a boolean, not a number (YAML reads yes/no, on/off as booleans)"
            )
        if value is not None and not isinstance(value, int | float):
            raise ValueError(f"{name}: {value!r} is not a number")
    return params


RequestParams = Annotated[dict[str, Any], AfterValidator(_numeric_params_are_numbers)]


class ModelSpec(StrictModel):
    """One model under test: how litellm reaches it and what is sent. Every param is sent and recorded."""

    name: str = Field("", description="Label in the outputs; defaults to `model`.")
    model: str = Field(description="litellm model string, e.g. openai/gpt-4o or anthropic/claude-haiku-4-5.")
    api_base: str | None = Field(None, description="OpenAI-compatible endpoint (vLLM, a gateway).")
    api_key_env: str | None = Field(
        None, description="Environment variable holding the key; default: the provider's standard one."
    )
    provider: str | None = Field(None, description="Throttle group; default: the model string's prefix.")
    params: RequestParams = Field(
        default_factory=dict,
        description="Request params over `default_params`; null removes one. A numeric one (temperature, "
        "top_p, max_tokens, seed, ...) must be a number.",
    )
    timeout_s: float = Field(120.0, gt=0, description="Time-out of one HTTP attempt.")
    prices: Prices | None = Field(
        None, description="USD per token, when litellm's price table lacks the model."
    )
    price_model: str | None = Field(None, description="Model string to price by, if not `model`.")
    estimated_reply_tokens: int = Field(
        400, ge=0, description="Reply length assumed by --dry-run and reserved per call under `max_cost_usd`."
    )
    limits: ProviderLimits | None = Field(
        None, description="Throttle of this role alone; default: its provider's (`providers`)."
    )
    mode: CallMode = Field(
        "single",
        description="single: one HTTP request per call; batch: through the provider's batch API, at "
        "its batch price, answered within its 24-hour window (settings under `batch`).",
    )

    @model_validator(mode="after")
    def _default_name(self) -> "ModelSpec":
        if not self.name:  # an assignment is validated: set only what is missing (plans build many jobs)
            self.name = self.model
        return self

    @field_validator("api_base")
    @classmethod
    def _one_spelling(cls, api_base: str | None) -> str | None:
        """`URL/` is `URL`: one spelling, so that one endpoint gives the same call keys and batches."""
        return api_base.rstrip("/") if api_base else api_base

    @property
    def provider_name(self) -> str:
        return self.provider or self.model.split("/", 1)[0]

    @property
    def assumed_reply_tokens(self) -> int:
        """The reply length the dry run and the progress bound assume: `estimated_reply_tokens`, at most the
        `max_tokens` the params send."""
        return assumed_reply_tokens(self.estimated_reply_tokens, self.params)

    def request(
        self,
        messages: list[dict[str, str]],
        prompt_version: str | None = None,
        *,
        scope: str | None = None,
        epoch: int = 0,
        extra_params: dict[str, Any] | None = None,
    ) -> ChatRequest:
        """The request for `messages`, with this model's params (and `extra_params`) exactly as sent."""
        return ChatRequest(
            model=self.model,
            messages=tuple(messages),
            params={**self.params, **(extra_params or {})},
            api_base=self.api_base,
            prompt_version=prompt_version,
            scope=scope,
            epoch=epoch,
        )

    def with_api_base(self, api_base: str, api_key_env: str | None = None) -> "ModelSpec":
        """The same model reached through one OpenAI-compatible endpoint, still priced as itself; the
        endpoint gets the key in `api_key_env`, else none (tasks/llm/call.py: api_key_for)."""
        if is_offline(self.model):
            return self
        model = self.model if self.model.startswith("openai/") else f"openai/{self.model}"
        update = {"model": model, "api_base": api_base, "price_model": self.price_model or self.model}
        return self.model_copy(update={**update, "api_key_env": api_key_env})


SpecT = TypeVar("SpecT", bound=ModelSpec)


class JudgeSpec(ModelSpec):
    """The judge model, its rubric prompt and how often an unparseable verdict is asked again."""

    rubric: Path | None = Field(
        None, description="Rubric prompt file; default: the benchmark's judge_rubric_v1.txt."
    )
    max_reasks: int = Field(2, ge=0, description="Follow-up requests for a reply without a valid score.")
    epoch: int = Field(
        0,
        ge=0,
        description="Repeat index of this judge's grading: each epoch is a new sample of every verdict "
        "(at temperature > 0 they may differ); part of each judge call's key, never sent.",
    )
    estimated_reply_tokens: int = 120


class SampleSpec(StrictModel):
    """Which threads are evaluated: a split, optional per-stratum quotas drawn with a seed, a limit."""

    split: str = "test"
    quotas: dict[str, int] | None = Field(None, description="Threads per stratum; none: the whole split.")
    seed: int = 0
    limit: int | None = Field(None, ge=1, description="Keep the first N threads of the seeded sample order.")


class BatchSettings(StrictModel):
    """How the roles in batch mode wait for their batches (tasks/evals/batch_waves.py)."""

    poll_interval_s: float = Field(60.0, gt=0, description="Seconds between checks of batches in flight.")
    wait_s: float | None = Field(
        None,
        ge=0,
        description="How long one run waits for batches before leaving them in flight (re-run, or the "
        "resume-batch-runs deployment, to go on); none: until every batch has finished.",
    )
    discount: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Batch over single-call price, for models litellm has no batch price for.",
    )
    max_calls: int = Field(50_000, ge=1, description="Calls per batch (OpenAI's limit).")
    max_file_mb: float = Field(190, gt=0, description="Input file size per batch (OpenAI's limit: 200 MB).")


class RunConfig(StrictModel):
    """What every benchmark's run config has: the models under test, a sample, call settings and limits.

    A benchmark's config adds its other roles (a judge, a patient) as `ModelSpec` fields named in
    `ROLE_FIELDS`, and its own settings; `with_overrides` applies per-run choices to any of them.
    """

    # The fields holding the other roles' specs, in the order `roles()` lists them.
    ROLE_FIELDS: ClassVar[tuple[str, ...]] = ()

    models: list[ModelSpec] = Field(min_length=1)
    sample: SampleSpec = SampleSpec()
    default_params: RequestParams = Field(default_factory=lambda: {"temperature": 0})
    providers: dict[str, ProviderLimits] = Field(default_factory=dict, description="Throttle per provider.")
    default_limits: ProviderLimits = ProviderLimits()
    retry: RetryPolicy = RetryPolicy()
    max_workers: int | None = Field(None, ge=1, description="Prefect worker threads; default from limits.")
    batch: BatchSettings = BatchSettings()
    # For every role at once, e.g. a local server that answers one request at a time (README).
    max_concurrency: int | None = Field(
        None,
        ge=1,
        description="Calls in flight at once per provider, over `providers`, `default_limits` "
        "and each role's `limits`.",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Longest reply of every role, sent as `max_tokens` (a role's own params win); "
        "it changes replies, so it is part of each call's key.",
    )
    timeout_s: float | None = Field(None, gt=0, description="Time-out of one HTTP attempt, over each role's.")
    max_cost_usd: CostCap = Field(
        None,
        description="Spending cap in USD of the run folder's calls, those of earlier runs included: the run "
        "stops before a call would pass it (tasks/llm/budget.py); a re-run with a higher cap goes on.",
    )

    @model_validator(mode="after")
    def _batch_capable(self) -> Self:
        for specs in self.roles().values():
            for spec in specs:
                if spec.mode == "batch":
                    check_batch_capable(spec.model, spec.api_base)
        return self

    @field_validator("models")
    @classmethod
    def _unique_names(cls, models: list[ModelSpec]) -> list[ModelSpec]:
        names = [m.name for m in models]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"model names must be unique: {duplicates}")
        return models

    def resolved(self, spec: SpecT) -> SpecT:
        """`spec` with `default_params` under its own params (a null param removes a default)."""
        reply_cap = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
        params = {
            k: v for k, v in {**self.default_params, **reply_cap, **spec.params}.items() if v is not None
        }
        return spec.model_copy(update={"params": params})

    def roles(self) -> dict[str, list[ModelSpec]]:
        """The models of the run by role: the models under test, then each role of `ROLE_FIELDS`."""
        return {"model": list(self.models), **{role: [getattr(self, role)] for role in self.ROLE_FIELDS}}

    def limits_for(self, spec: ModelSpec) -> ProviderLimits:
        """The role's own limits, else its provider's, else the default; `max_concurrency` replaces theirs."""
        limits = spec.limits or self.providers.get(spec.provider_name, self.default_limits)
        if self.max_concurrency is None:
            return limits
        return limits.model_copy(update={"max_concurrency": self.max_concurrency})

    def call_options(self, spec: ModelSpec) -> CallOptions:
        return CallOptions(
            provider=spec.provider_name,
            limits=self.limits_for(spec),
            retry=self.retry,
            timeout_s=self.timeout_s or spec.timeout_s,
            api_key_env=spec.api_key_env,
            prices=spec.prices,
            price_model=spec.price_model,
            mode=spec.mode,
            batch_discount=self.batch.discount,
            estimated_reply_tokens=spec.estimated_reply_tokens,
        )

    def batch_roles(self) -> list[str]:
        """The roles with a model in batch mode."""
        return [role for role, specs in self.roles().items() if any(spec.mode == "batch" for spec in specs)]

    def worker_count(self) -> int:
        """Enough worker threads to keep every provider busy even while some threads wait on a slow one."""
        if self.max_workers is not None:
            return self.max_workers
        # Calls are throttled per (provider, limits): a role with limits of its own has its own slots.
        throttles = {
            (spec.provider_name, self.limits_for(spec)) for specs in self.roles().values() for spec in specs
        }
        slots = sum(limits.max_concurrency for _, limits in throttles)
        return max(4, min(256, 2 * slots))

    def not_in_run_id(self) -> dict[str, Any]:
        """Settings that change how calls are made, never what they return: left out of the run id."""
        return {
            "providers": True,
            "default_limits": True,
            "retry": True,
            "max_workers": True,
            "batch": True,
            "max_concurrency": True,
            "timeout_s": True,
            "max_cost_usd": True,
            # Added after runs were recorded: left out while unset, so their run ids stay as they were.
            **({"max_tokens": True} if self.max_tokens is None else {}),
            "models": {"__all__": {"limits", "mode"}},
            **{role: {"limits", "mode"} for role in self.ROLE_FIELDS},
        }

    def with_paths_from(self, folder: Path) -> Self:
        """The config with its relative file paths (prompt files) read from `folder`."""
        return self

    def with_overrides(self, overrides: "RunOverrides") -> Self:
        """The config with per-run choices applied; a model or role not in the config is a model string.

        A role given a new model keeps its own settings (a judge's rubric) but not the old model's
        name, endpoint or params. Raises ValueError for a role or setting this config does not have.
        """
        for field, names, kind in (
            ("roles", self.ROLE_FIELDS, "role"),
            ("settings", type(self).model_fields, "setting"),
        ):
            if unknown := sorted(set(getattr(overrides, field)) - set(names)):
                raise ValueError(f"overrides.{field}.{unknown[0]}: {unknown_name(unknown[0], names, kind)}")
        known = {m.name: m for m in self.models}
        names = overrides.models
        models = [known.get(name) or ModelSpec(model=name) for name in names] if names else self.models
        roles = {role: getattr(self, role) for role in self.ROLE_FIELDS}
        for role, model in overrides.roles.items():
            # Naming the role's own model (by name or model string) keeps it as configured.
            if model not in (roles[role].name, roles[role].model):
                kept = set(type(roles[role]).model_fields) - set(ModelSpec.model_fields)
                roles[role] = type(roles[role])(model=model, **{k: getattr(roles[role], k) for k in kept})
        if overrides.api_key_env is not None and overrides.api_base is None:
            raise ValueError(
                f"the key in {overrides.api_key_env} is sent only to an api_base: name the endpoint"
            )
        if overrides.api_base is not None:
            models = [m.with_api_base(overrides.api_base, overrides.api_key_env) for m in models]
            roles = {
                role: spec.with_api_base(overrides.api_base, overrides.api_key_env)
                for role, spec in roles.items()
            }
        if unknown := sorted(set(overrides.batch) - {"model", *self.ROLE_FIELDS}):
            refusal = unknown_name(unknown[0], ("model", *self.ROLE_FIELDS), "role")
            raise ValueError(f"overrides.batch names {unknown[0]}: {refusal}")
        if "model" in overrides.batch:  # the models under test whose provider has a batch API
            models = [
                m.model_copy(update={"mode": "batch"}) if batch_capable(m.model, m.api_base) else m
                for m in models
            ]
        roles = {
            role: spec.model_copy(update={"mode": "batch"}) if role in overrides.batch else spec
            for role, spec in roles.items()
        }
        batch_choices = {"wait_s": overrides.batch_wait_s, "poll_interval_s": overrides.batch_poll_s}
        batch = self.batch.model_copy(update={k: v for k, v in batch_choices.items() if v is not None})
        sample_choices = {"split": overrides.split, "limit": overrides.limit}
        sample = self.sample.model_copy(update={k: v for k, v in sample_choices.items() if v is not None})
        return self.model_validate(
            {
                **self.model_dump(),
                "models": [m.model_dump() for m in models],
                **{role: spec.model_dump() for role, spec in roles.items()},
                "sample": sample.model_dump(),
                "batch": batch.model_dump(),
                **overrides.call_settings(),
                **overrides.settings,
            }
        )


# What a judge does with an answer cut at max_tokens (finish_reason 'length').
TruncatedAnswers = Literal["judge", "mark"]


class JudgedRunConfig(RunConfig):
    """A run config whose answers an LLM judge grades (ThReadMed-QA's turns, the consultation's FQR)."""

    ROLE_FIELDS: ClassVar[tuple[str, ...]] = ("judge",)

    judge: JudgeSpec
    truncated: TruncatedAnswers = Field(
        "judge",
        description="An answer cut at max_tokens (finish_reason 'length'): judge it as given, counted as "
        "truncated in the summary and the report (judge), or leave it unjudged as 'truncated' (mark).",
    )

    def not_in_run_id(self) -> dict[str, Any]:
        # Added after runs were recorded: left out at their defaults, so their run ids stay as they were.
        excluded = {**super().not_in_run_id(), **({"truncated": True} if self.truncated == "judge" else {})}
        if self.judge.epoch == 0:
            excluded["judge"] = {*excluded["judge"], "epoch"}
        return excluded


class EvalConfig(JudgedRunConfig):
    """ThReadMed-QA's run config: the models under test, the judge and the conditions."""

    judge: JudgeSpec = JudgeSpec(name="gpt-4o", model="openai/gpt-4o")
    conditions: list[Condition] = Field(
        ["baseline", "oracle"],
        description="baseline: a model sees its own earlier answers; oracle: the physician's.",
    )

    @field_validator("conditions")
    @classmethod
    def _some_conditions(cls, conditions: list[Condition]) -> list[Condition]:
        if not conditions:
            raise ValueError("at least one condition is needed")
        return list(dict.fromkeys(conditions))

    def with_paths_from(self, folder: Path) -> Self:
        rubric = self.judge.rubric
        if rubric is None or rubric.is_absolute():
            return self
        return self.model_copy(
            update={"judge": self.judge.model_copy(update={"rubric": (folder / rubric).resolve()})}
        )


# Unparametrized, `EvaluationSettings` holds ThReadMed's config (PEP 696 default).
ConfigT = TypeVar("ConfigT", bound=RunConfig, default=EvalConfig)


class EvaluationSettings(StrictModel, Generic[ConfigT]):
    """The evaluation's input (a dataset or case set folder), its run directory and its config.

    `EvaluationSettings[SnomedConfig]` validates another benchmark's config; unparametrized it is
    ThReadMed's. A deployment run may name a YAML file (`config_file`) instead of passing the `config`.
    """

    dataset_dir: Path = Field(description="The benchmark's input folder (a dataset build, a case set).")
    run_dir: Path = Field(
        description="Where the ledger, parquet outputs and manifest go; re-use it to resume."
    )
    # Not required in the schema, so a deployment run may give `config_file` alone; validation fills it.
    config: ConfigT = Field(None, validate_default=True)  # type: ignore[assignment]
    config_file: Path | None = Field(None, description="YAML config read when `config` is not given.")

    @model_validator(mode="before")
    @classmethod
    def _read_config_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("config") is not None:
            return data
        if not data.get("config_file"):
            raise ValueError("give `config` (the settings themselves) or `config_file` (a YAML file)")
        return {**data, "config": load_config(Path(data["config_file"]), cls.config_model())}

    @classmethod
    def config_model(cls) -> type[RunConfig]:
        annotation = cls.model_fields["config"].annotation
        return annotation if isinstance(annotation, type) else EvalConfig


def load_config(path: Path, config_model: type[ConfigT] = EvalConfig) -> ConfigT:  # type: ignore[assignment]
    """Read a YAML config; relative paths of prompt files are taken relative to the config file.

    Raises UserError naming the file and what is wrong in it, e.g. 'eval.yaml: condtions: not a setting;
    did you mean conditions?': a misspelt key is refused before any work, never read as its default.
    """
    raw = safe_load_yaml(Path(path).read_text(encoding="utf-8")) or {}
    try:
        config = config_model.model_validate(raw)
    except ValidationError as error:
        raise UserError(f"{path}: {validation_message(error)}", "--config") from None
    return config.with_paths_from(Path(path).parent)


class RunOverrides(StrictModel):
    """Per-run choices over a config (command-line flags, flow parameters); None or empty keeps it."""

    models: list[str] | None = Field(None, description="Model names from the config, or litellm strings.")
    roles: dict[str, str] = Field(
        default_factory=dict, description="A role's new model (e.g. judge, patient): a litellm string."
    )
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    api_base: str | None = Field(None, description="Send every model and role to this endpoint.")
    api_key_env: str | None = Field(
        None, description="Environment variable holding the key sent to `api_base` (default: none sent)."
    )
    max_concurrency: int | None = Field(None, ge=1, description="Calls in flight at once per provider.")
    max_tokens: int | None = Field(None, ge=1, description="Longest reply of every role.")
    timeout_s: float | None = Field(None, gt=0, description="Time-out of one HTTP attempt of every role.")
    max_cost_usd: CostCap = Field(None, description="Spending cap of the run folder in USD.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Top-level settings of the benchmark's config (conditions, epochs)."
    )
    batch: list[str] = Field(
        default_factory=list,
        description="Roles whose calls go through the provider's batch API: model (the models under test "
        "whose provider has one; the others stay single calls), or a role (judge, patient).",
    )
    batch_wait_s: float | None = Field(None, ge=0, description="How long to wait for batches in flight.")
    batch_poll_s: float | None = Field(None, gt=0, description="Seconds between checks of batches in flight.")

    def call_settings(self) -> dict[str, Any]:
        """The config fields these choices set for every role (concurrency, reply length, time-out) and the
        run's spending cap."""
        chosen = {
            "max_concurrency": self.max_concurrency,
            "max_tokens": self.max_tokens,
            "timeout_s": self.timeout_s,
            "max_cost_usd": self.max_cost_usd,
        }
        return {name: value for name, value in chosen.items() if value is not None}


def resolve_settings(
    *,
    dataset_dir: str | Path,
    run_dir: str | Path,
    config: RunConfig | None = None,
    config_file: str | Path | None = None,
    overrides: RunOverrides | None = None,
    config_model: type[RunConfig] = EvalConfig,
) -> EvaluationSettings:
    """The settings of one evaluation: a config (given, read from a file, or made of bare model strings)
    with the per-run choices applied on top. Raises ValueError when no models are named anywhere."""
    overrides = overrides or RunOverrides()
    if config is None and config_file is not None:
        config = load_config(Path(config_file), config_model)
    if config is None:
        if not overrides.models:
            raise ValueError("give a config, a config file, or models (litellm model strings)")
        config = config_model(models=[ModelSpec(model=name) for name in overrides.models])
    return EvaluationSettings[config_model](
        dataset_dir=Path(dataset_dir), run_dir=Path(run_dir), config=config.with_overrides(overrides)
    )
