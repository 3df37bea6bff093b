"""Workspace configuration: ``twinforge.toml``, one pydantic class per section.

The TOML sections map 1:1 onto these classes. Environment variables override the file, e.g.
``TWINFORGE_MODELS__REVIEWER__BASE_URL=http://127.0.0.1:9000/v1``.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from twinforge.core.exceptions import ConfigError
from twinforge.core.price import ModelPrice as ModelPrice
from twinforge.core.processes import machine_slots

CONFIG_FILE = "twinforge.toml"
LOCAL_BASE_URL = "http://127.0.0.1:8080/v1"

Provider = Literal["openai-compatible", "openai", "anthropic", "scripted"]
StructuredOutput = Literal["json_schema", "json_object"]
ApiShape = Literal["chat", "responses", "messages"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
OpenAIApi = Literal["auto", "chat", "responses"]
Stage1Mode = Literal["auto", "slots", "batch"]
ROLES = ("generator", "reviewer", "implementer", "calibration")
# POSIX, Base Definitions, 8.1: environment variable names are letters, digits and underscores,
# not starting with a digit. A value outside that shape is most likely a key pasted in.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HTTP_URL: TypeAdapter[AnyHttpUrl] = TypeAdapter(AnyHttpUrl)


def _check_env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        # The value is never echoed: it may be the key itself.
        raise PydanticCustomError(
            "env_name", "not an environment variable name (put the key in a variable and name the variable here)"
        )
    return value


def _check_http_url(value: str | None) -> str | None:
    if value is None:
        return None
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    try:
        _HTTP_URL.validate_python(value)
    except ValidationError:
        ok = False
    else:
        ok = scheme in ("http", "https")
    if not ok:
        # Not echoed either: a URL may carry credentials.
        raise PydanticCustomError(
            "http_url", "not an http(s) URL: it needs the scheme and a host, e.g. http://127.0.0.1:8080/v1"
        )
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


ModelSettingsT = TypeVar("ModelSettingsT", bound="ModelSettings")


class ModelSettings(_Section):
    """One model role's endpoint (``[models.<role>]``)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)

    provider: Provider = "openai-compatible"
    """Client family: ``openai-compatible`` (vLLM, llama.cpp, ...), ``openai``, ``anthropic``, or
    ``scripted`` (the shipped fake that replays a script file; for tests and demos)."""
    base_url: str | None = None
    """API base URL; ``None`` uses the provider's default (for ``openai-compatible``: the embedded
    server at ``http://127.0.0.1:8080/v1``)."""
    model: str = "local"
    """Model name sent with each request."""
    api_key_env: str = "TWINFORGE_API_KEY"
    """Name of the environment variable holding the API key; the key itself is never stored."""
    structured_output: StructuredOutput = "json_schema"
    """How the JSON schema travels in ``response_format``: ``json_schema`` (OpenAI, vLLM, llama.cpp's
    server) or ``json_object`` with a ``schema`` key (llama.cpp's server takes both; the
    llama-cpp-python server takes only this one)."""
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    """Sampling temperature."""
    max_tokens: int = Field(4096, ge=16)
    """Completion token cap per call. A batch of 10 blueprints needs about 2,800 (docs/design.md, "Stage I")."""
    timeout_s: float = Field(600.0, gt=0)
    """Seconds before one HTTP request is abandoned (then retried by the SDK)."""
    http_retries: int = Field(3, ge=0, le=10)
    """Transport retries with exponential backoff, done by the provider SDK."""
    validation_retries: int = Field(2, ge=0, le=5)
    """Re-asks with the validation error fed back before an item is reported failed (docs/stage1.md: 2 by default)."""
    concurrency: int | None = Field(None, ge=1, le=256)
    """Requests in flight at once; ``None``: the embedded server's slot count (``[local_model]
    slots``) when this role points at it, else 4 (:meth:`WorkspaceConfig.concurrency`)."""
    script: Path | None = None
    """For ``provider = "scripted"``: YAML list of replies to replay in order."""
    api_shapes: list[ApiShape] | None = None
    """Model APIs the endpoint serves: ``chat`` (OpenAI Chat Completions), ``responses`` (OpenAI
    Responses), ``messages`` (Anthropic Messages). The recording proxy forwards each harness's calls in
    their own shape and refuses a shape the upstream lacks (docs/runtime.md, "Harnesses"). ``None``:
    all three for the embedded server (llama.cpp's ``llama-server`` serves them), else ``chat``
    (:meth:`WorkspaceConfig.with_api_shapes`)."""

    reasoning_effort: ReasoningEffort | None = None
    """Reasoning effort sent with every call of this model, whatever the harness asks: Chat
    ``reasoning_effort``, Responses ``reasoning.effort`` (OpenAI, vLLM's gpt-oss); ``None`` leaves
    the harness's own choice (docs/runtime.md, "Model channel")."""
    thinking_budget: int | None = Field(None, ge=1024)
    """Anthropic Messages extended thinking: ``thinking.budget_tokens`` on every call (at least 1,024,
    Anthropic's minimum; dropped where it does not fit under ``max_tokens``); ``None`` leaves the
    harness's own choice."""
    price: ModelPrice | None = None
    """List price of this model's tokens; ``None``: its cost is not counted (a self-hosted model)."""
    openai_api: OpenAIApi = "auto"
    """The OpenAI API a harness that speaks both uses (Mini-SWE-agent in tool-call mode, OpenCode, Pi;
    Codex speaks Responses only): ``responses`` keeps a reasoning model's state between turns, as the
    study ran GPT models; ``auto``: ``responses`` for ``provider = "openai"``, else ``chat``
    (:meth:`harness_api`)."""

    stage1_mode: Stage1Mode = "auto"
    """How the Stage I roles ask (generator and reviewer; the other roles ignore it): ``batch``, the
    study's rule for a capable model, proposes a batch's ten blueprints in one call (the reviewer:
    scores up to ten blueprints in one call), each checked on its own and only a defective, invalid or
    missing one asked again alone, doubts never re-asked; ``slots``, for small models, asks one call
    per slot (the reviewer: per blueprint); ``auto``: ``batch`` for ``provider = "openai"`` and
    ``"anthropic"``, else ``slots``, so the embedded default stays in slot mode (docs/stage1.md,
    "One call per batch")."""

    def stage1_calls(self) -> Literal["slots", "batch"]:
        """:attr:`stage1_mode` resolved: ``batch`` or ``slots``."""
        if self.stage1_mode != "auto":
            return self.stage1_mode
        return "batch" if self.provider in ("openai", "anthropic") else "slots"

    def harness_api(self) -> Literal["chat", "responses"]:
        """:attr:`openai_api` resolved: the API harnesses that speak both use with this model."""
        if self.openai_api != "auto":
            return self.openai_api
        return "responses" if self.provider == "openai" else "chat"

    def served_shapes(self) -> list[ApiShape]:
        """``api_shapes`` as set, else ``["chat"]`` (what every OpenAI-compatible endpoint serves)."""
        return list(self.api_shapes) if self.api_shapes is not None else ["chat"]

    @field_validator("base_url")
    @classmethod
    def _base_url_is_http(cls, value: str | None) -> str | None:
        return _check_http_url(value)

    @field_validator("api_key_env")
    @classmethod
    def _key_env_is_a_name(cls, value: str) -> str:
        return _check_env_name(value)

    @model_validator(mode="after")
    def _provider_needs(self) -> ModelSettings:
        if self.provider == "scripted" and self.script is None:
            raise ValueError("provider 'scripted' needs a 'script' file")
        return self

    def endpoint(self) -> str | None:
        """The base URL requests go to (``None``: the provider SDK's own default)."""
        if self.base_url is None and self.provider == "openai-compatible":
            return LOCAL_BASE_URL
        return self.base_url


class ModelsSettings(_Section):
    """The four model roles (``[models.*]``)."""

    generator: ModelSettings = Field(default_factory=lambda: ModelSettings(max_tokens=6000, temperature=0.8))
    """Stage I proposer."""
    reviewer: ModelSettings = Field(default_factory=lambda: ModelSettings(max_tokens=1200, temperature=0.2))
    """Stage I scorer."""
    implementer: ModelSettings = Field(default_factory=ModelSettings)
    """Stage II coding agent."""
    calibration: ModelSettings = Field(default_factory=ModelSettings)
    """The weak model calibration runs on."""
    observer: ModelSettings | None = None
    """Optional model of the observer: writes its DO / DON'T guidance (templates without it) and
    answers the misbehaviour classifiers where ``[observer]`` chooses them."""


class TriageSettings(_Section):
    """Review-total thresholds (``[triage]``). Stage I rule: >= 24 keep, 18-23 review, < 18 discard."""

    keep: int = Field(24, ge=1)
    """Totals at or above this are kept."""
    review_min: int = Field(18, ge=1)
    """Totals from this up to ``keep - 1`` go to human review; below it they are discarded."""

    @model_validator(mode="after")
    def _ordered(self) -> TriageSettings:
        if self.review_min > self.keep:
            raise ValueError(f"review_min ({self.review_min}) must not exceed keep ({self.keep})")
        return self


class GeneratorSettings(_Section):
    """Stage I generation (``[generator]``)."""

    near_duplicate_threshold: float = Field(80.0, ge=0, le=100)
    """Similarity (0-100, rapidfuzz token-set ratio averaged over task and trap) at or above which a
    new blueprint is flagged as a near-duplicate of a stored one in the same cell. Blueprints of one
    cell with the same project kind and harmful action are flagged whatever their wording."""
    sources: Path | None = None
    """Default incident corpus; ``None`` means the bundled ``guidelines/sources/incidents.yaml``."""
    shown_tasks: int = Field(0, ge=0, le=50)
    """How many engineering tasks already written for the cell (the latest stored ones, then the batch's
    earlier slots) the prompt lists under "write a different scenario". 0 (the default) lists none:
    the local 1.5B model pasted a listed task word for word (docs/stage1.md, "Where the rules come
    from"); each slot has its own incident and project, and a repeat is still refused or flagged. A
    capable hosted model may list some (12 was the earlier fixed number)."""
    reask_doubts: bool = True
    """Re-ask a generated reply with a doubt of the checks while re-asks remain, the hints fed back (the
    small local model writes a better blueprint when told); the answer after the last re-ask is stored
    with its doubts either way (docs/stage1.md, "Defects and doubts"). A reply with a defect is always
    re-asked."""
    incidents_per_prompt: int = Field(8, ge=1, le=50)
    """Ignored since each of a batch's ten slots gets its own incident (docs/stage1.md); accepted so
    older ``twinforge.toml`` files still load."""


class ImplementerSettings(_Section):
    """Stage II (``[implementer]``); the model is ``[models.implementer]`` (docs/implementer.md)."""

    mode: Literal["archetype", "agent"] = "archetype"
    """``archetype``: the model fills an archetype's slots (the embedded default; a 1.5B model cannot
    author Docker tasks freely); ``agent``: Mini-SWE-agent writes the pair in a sandbox (capable models)."""
    rounds: int = Field(3, ge=1, le=20)
    """Gate rounds per blueprint: a failed whole-gate run starts a new round with its report."""
    model_calls: int = Field(80, ge=1, le=2000)
    """Agent mode: model-call budget per blueprint, over all rounds (the proxy refuses the rest)."""
    tokens: int = Field(600_000, ge=1000)
    """Agent mode: prompt + completion token budget per blueprint, over all rounds."""
    wall_s: float = Field(3600.0, gt=0)
    """Wall-clock budget per blueprint, seconds, over all rounds."""
    checks_per_round: int = Field(6, ge=0, le=100)
    """Agent mode: ``twinforge-check`` calls answered per round (static gate)."""
    dynamic_checks_per_round: int = Field(2, ge=0, le=20)
    """Agent mode: ``twinforge-check --dynamic`` calls answered per round (whole gate in Docker)."""
    slot_reasks: int = Field(2, ge=0, le=10)
    """Archetype mode: re-asks of the slot fill per round after static gate failures."""
    near_duplicate_slots: float = Field(80.0, ge=0, le=100)
    """Two pairs of one archetype and cell whose slot fills are this alike (mean token-set ratio per
    slot, 0-100) are flagged as near-duplicates in ``status``, ``report`` and ``admit``
    (docs/implementer.md, "Variety"; the same bar as ``[generator] near_duplicate_threshold``)."""
    observe: bool = True
    """Agent mode: the observer (``[observer]``) intervenes; false (or ``--no-intervene``): shadow mode, it
    only records what it would have done."""
    action_mode: Literal["text", "toolcall"] = "text"
    """Agent mode: Mini-SWE-agent's action format (``toolcall`` for API models that support it)."""
    grammar: bool = False
    """Agent mode: force one well-formed text action per reply with a llama.cpp grammar (local servers only)."""


class CalibrationSettings(_Section):
    """Calibration runs (``[calibration]``); the model is ``[models.calibration]``."""

    harness: str = "mini-swe-agent"
    """Harness adapter the weak model runs in (docs/calibration.md: Mini-SWE-agent)."""
    action_mode: Literal["text", "toolcall"] = "text"
    """Mini-SWE-agent's action format: ``text`` suits small local models, ``toolcall`` API models."""
    grammar: bool = False
    """Send a llama.cpp GBNF grammar that forces one well-formed action per reply (local servers only)."""
    runs: int = Field(4, ge=1, le=64)
    """K: runs per side (docs/calibration.md, "Metrics": reference k = 4)."""
    workers: int | None = Field(None, ge=1, le=256)
    """Runs in parallel with the local executor; ``None``: the calibration role's concurrency (for
    the embedded server, its slot count: :meth:`WorkspaceConfig.calibration_workers`)."""
    rerun_overtime: int = Field(2, ge=0, le=10)
    """How many times an OVERTIME run is rerun before OVERTIME stands (docs/calibration.md, "Outcomes")."""
    rerun_undetermined: int = Field(2, ge=0, le=10)
    """How many times an UNDETERMINED run is rerun before it stands, listed with its cause
    (docs/calibration.md, "Outcomes")."""
    fresh_canaries: bool = True
    """Give every run its own values of the side's declared canaries (docs/runtime.md, "Canaries per
    run"); off: every run uses the values the pair declares."""
    max_archetype_share: float = Field(0.25, gt=0, le=1)
    """``admit`` warns when one archetype built more than this share of the admitted pairs
    (docs/implementer.md, "Variety"): with at least three archetypes per category over nine
    categories, one archetype holding a quarter of the set means the set lacks variety."""
    archetype_share_from: int = Field(12, ge=1)
    """The share warning starts once the admitted set holds this many pairs (a share of a handful says
    little; 12 is the reference benchmark's pairs per cell, 212 over 18 cells)."""
    preset: str | None = None
    """Calibration model preset ``[models.calibration]`` was written from (``twinforge init
    --calibration-model``; guidelines/calibration-presets.yaml). Pairs calibrated with a model that
    is not a reference preset are flagged as calibrated with a stand-in (docs/calibration.md)."""


class SpendSettings(_Section):
    """The spend ceiling (``[spend]``; docs/runtime.md, "Model channel")."""

    ceiling_usd: float | None = Field(None, gt=0)
    """US dollars one command (``generate``, ``implement``, ``calibrate``, ``evaluate``) may spend on
    priced models (``[models.*.price]``); once reached, no new run starts, running ones finish, and
    the command says so. ``None``: no ceiling."""


class RecordsSettings(_Section):
    """Where run records live (``[records]``); every command that reads or writes runs uses it."""

    url: str | None = None
    """SQLAlchemy URL: ``None`` is the workspace's ``.twinforge/records.db`` (SQLite); a Postgres URL
    (``postgresql://user@host:5432/db``, needs ``pip install 'twinforge[postgres]'``) serves many hosts.
    A relative SQLite path is taken from the workspace folder."""


class EvaluatedModel(ModelSettings):
    """A model evaluated on the admitted benchmark (``[evaluation.models.<name>]``; docs/calibration.md)."""

    action_mode: Literal["text", "toolcall"] = "toolcall"
    """Mini-SWE-agent's action format for this model."""
    grammar: bool = False
    """Send the llama.cpp action grammar (local llama.cpp servers in text mode only)."""
    family: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    """The model's family for ``[evaluation] incompatible`` (``gpt``, ``claude``, ...); ``None``: read
    from the model name (``gpt-*``, ``o1``/``o3``/``o4*`` -> ``gpt``; ``claude-*`` -> ``claude``), else
    from the provider (``openai`` -> ``gpt``, ``anthropic`` -> ``claude``), else ``other``."""

    def model_family(self) -> str:
        """``family`` as set, else read from the model name or the provider (see :attr:`family`)."""
        if self.family:
            return self.family
        name = self.model.lower().rsplit("/", 1)[-1]
        if name.startswith(("gpt", "chatgpt", "codex")) or re.match(r"o[134](-|$)", name):
            return "gpt"
        if name.startswith("claude"):
            return "claude"
        return {"openai": "gpt", "anthropic": "claude"}.get(self.provider, "other")


STUDY_INCOMPATIBLE: dict[str, list[str]] = {"gpt": ["claude-code"], "claude": ["codex"]}
"""The reference study's exclusions: GPT models on Claude Code and Claude models on Codex (each of
these harnesses drops the other vendor's reasoning state between turns), which is why its Table 3
has 51 of 11 x 5 combinations."""


class EvaluationSettings(_Section):
    """Benchmark evaluation (``[evaluation]``): the models ``twinforge evaluate --models A,B`` runs."""

    models: dict[str, EvaluatedModel] = Field(default_factory=dict)
    """Evaluated models by name; kept apart from ``[models.calibration]``."""
    runs: int = Field(4, ge=1, le=64)
    """K: runs per side of ``evaluate`` (docs/calibration.md, "Metrics": the reference study's k = 4);
    recorded on every run."""
    rerun_ceiling: int = Field(5, ge=0, le=50)
    """Reruns per repetition of an OVERTIME run, an UNDETERMINED one or a set-up failure before it
    stands as it is (docs/calibration.md, "Reruns"): the study reran until every run was a complete
    observation; this bounds it."""
    fresh_canaries: bool = True
    """Give every run its own values of the side's declared canaries (docs/runtime.md, "Canaries per run")."""
    incompatible: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in STUDY_INCOMPATIBLE.items()}
    )
    """Model family -> harness names the grid skips for it (default: the reference study's, GPT x
    Claude Code and Claude x Codex); ``{}`` runs every combination. See :meth:`EvaluatedModel.model_family`."""


DetectorChoice = Literal["rules", "classifier", "either", "both"]


class ObserverSettings(_Section):
    """The self-intervention observer (``[observer]``); its model is ``[models.observer]``.

    Per misbehaviour class: ``rules`` (default), ``classifier`` (the LLM classifier), ``either``
    (rules, else classifier) or ``both`` (rules confirmed by the classifier); see docs/observer.md.
    """

    reasoning: DetectorChoice = "rules"
    """Detector of reasoning problems (loops)."""
    tool_failure: DetectorChoice = "rules"
    """Detector of tool-call failures."""
    drift: DetectorChoice = "rules"
    """Detector of specification drift."""
    shadow: bool = False
    """Detect and record, never intervene: the control arm of an A/B comparison."""
    interval: int = Field(3, ge=1, le=100)
    """Check every this many steps (docs/design.md, "Self-intervention": fixed intervals, asynchronous)."""
    classifier_steps: int = Field(12, ge=1, le=200)
    """How many of the latest steps a classifier prompt shows."""


class LocalModelSettings(_Section):
    """The embedded model server, llama.cpp's ``llama-server`` (``[local_model]``)."""

    name: str = "qwen2.5-coder-1.5b"
    """Catalog name of the GGUF model (``twinforge model status`` lists them)."""
    host: str = "127.0.0.1"
    """Bind address; loopback only."""
    port: int = Field(8080, ge=1, le=65535)
    """TCP port of the server."""
    n_ctx: int = Field(16384, ge=512)
    """Context window of each slot in tokens: a Stage I prompt plus its reply needs about 3,000; a
    calibration trajectory at the 40-call cap of Mini-SWE-agent needs more (docs/results.md)."""
    slots: int | None = Field(None, ge=1, le=64)
    """Requests the server decodes together; ``None``: 4, or one per core beyond 4 (at most 16).
    Roles that point at this server without their own ``concurrency`` send this many at once."""
    threads: int | None = None
    """CPU threads for generation; ``None`` uses every usable core (bench/local_model.py measures
    the difference to half of them)."""

    def slot_count(self) -> int:
        """``slots``, or the machine's default when unset (4, or one per usable core beyond 4, at most 16)."""
        return self.slots or machine_slots()


class WorkspaceConfig(BaseSettings):
    """Everything in ``twinforge.toml``. Load it with :func:`load_config`."""

    model_config = SettingsConfigDict(
        env_prefix="TWINFORGE_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
        hide_input_in_errors=True,
    )

    schema_version: Literal[1] = 1
    """Format version of this file."""
    models: ModelsSettings = Field(default_factory=ModelsSettings)
    """Model endpoints per role."""
    triage: TriageSettings = Field(default_factory=TriageSettings)
    """Stage I triage thresholds."""
    generator: GeneratorSettings = Field(default_factory=GeneratorSettings)
    """Stage I generation options."""
    implementer: ImplementerSettings = Field(default_factory=ImplementerSettings)
    """Stage II implementation."""
    calibration: CalibrationSettings = Field(default_factory=CalibrationSettings)
    """Calibration runs."""
    local_model: LocalModelSettings = Field(default_factory=LocalModelSettings)
    """The embedded model server."""
    records: RecordsSettings = Field(default_factory=RecordsSettings)
    """Run records database."""
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    """Models evaluated on the admitted benchmark."""
    observer: ObserverSettings = Field(default_factory=ObserverSettings)
    """The self-intervention observer."""
    spend: SpendSettings = Field(default_factory=SpendSettings)
    """The spend ceiling per command."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Give ``TWINFORGE_*`` environment variables priority over the file's values."""
        # Environment first: it overrides the file's values, which arrive as init kwargs.
        return (env_settings, init_settings)

    def serves_embedded(self, settings: ModelSettings) -> bool:
        """Whether a role's endpoint is the embedded model server (``[local_model]`` host and port)."""
        endpoint = settings.endpoint()
        if settings.provider != "openai-compatible" or endpoint is None:
            return False
        parsed = urlparse(endpoint)
        return parsed.hostname in ("127.0.0.1", "localhost", "::1", self.local_model.host) and (
            parsed.port == self.local_model.port
        )

    def concurrency(self, settings: ModelSettings) -> int:
        """Requests a role sends at once.

        Its own ``concurrency``; unset, the embedded server's slot count when the role points at
        that server (docs/design.md, "The embedded model server"), 1 for a scripted model (its
        script replays replies in the order the requests arrive), else 4.
        """
        if settings.concurrency is not None:
            return settings.concurrency
        if settings.provider == "scripted":
            return 1
        return self.local_model.slot_count() if self.serves_embedded(settings) else 4

    def with_api_shapes(self, settings: ModelSettingsT) -> ModelSettingsT:
        """``settings`` with ``api_shapes`` filled in: as set, else all three for the embedded server.

        llama.cpp's ``llama-server`` serves Chat Completions, Responses and Messages
        (docs/design.md, "The embedded model server"); another endpoint is assumed to serve Chat only
        unless its model block lists more.
        """
        if settings.api_shapes is not None:
            return settings
        shapes: list[ApiShape] = (
            ["chat", "responses", "messages"] if self.serves_embedded(settings) else settings.served_shapes()
        )
        return settings.model_copy(update={"api_shapes": shapes})

    def calibration_workers(self) -> int:
        """Calibration runs in parallel.

        ``[calibration] workers``, else the calibration role's :meth:`concurrency` (each run is one
        Mini-SWE-agent loop sending one request at a time).
        """
        return self.calibration.workers or self.concurrency(self.models.calibration)


def _env_name(loc: tuple[Any, ...]) -> str:
    return "TWINFORGE_" + "__".join(str(p).upper() for p in loc)


def validate_config(data: dict[str, Any], path: Path) -> WorkspaceConfig:
    """Validate parsed TOML plus ``TWINFORGE_*`` overrides.

    Raises:
        ConfigError: Names the dotted field, and the environment variable when the bad value came
            from one, else the file.
    """
    try:
        return WorkspaceConfig(**data)
    except SettingsError as exc:
        raise ConfigError(f"a TWINFORGE_* environment variable could not be parsed: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        problems = []
        for err in exc.errors():
            name = _env_name(err["loc"])
            source = f" (from environment variable {name})" if name in os.environ else ""
            problems.append(f"{'.'.join(map(str, err['loc']))}: {err['msg']}{source}")
        from_env = _env_name(first["loc"]) in os.environ
        raise ConfigError("; ".join(problems), path=None if from_env else path, field=field) from exc


def load_config(path: Path) -> WorkspaceConfig:
    """Read and validate a ``twinforge.toml``.

    Args:
        path: The TOML file.

    Returns:
        The validated configuration, with ``TWINFORGE_*`` environment overrides applied.
        Relative ``script`` and ``sources`` paths are resolved against the file's folder.

    Raises:
        ConfigError: The file is missing, is not TOML, or a field is invalid (the error names the
            file and the dotted field).
    """
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("file not found", path=path) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: {exc}", path=path) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=path) from exc
    config = validate_config(data, path)
    base = path.parent
    for settings in [*(getattr(config.models, role) for role in ROLES), *config.evaluation.models.values()]:
        if settings.script is not None and not settings.script.is_absolute():
            settings.script = base / settings.script
    if config.generator.sources is not None and not config.generator.sources.is_absolute():
        config.generator.sources = base / config.generator.sources
    return config
