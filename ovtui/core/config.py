"""The schema of ``ovtui.toml``, validated by pydantic (``ovtui.storage.config_file`` reads and writes it).

A key that names a component (``[llm] backend``, ``[trainer] environment``/``agent``/``train_with``/
``stream_with``, ``[sessions] train_with``, ``[datasets.NAME] source``) is only a string here: which
names exist is the registry's to say (``ovtui.wiring.registry.check_names``, when a workspace opens
and in ``ovtui check``), since another package may register one.

An API key never lives here: ``[llm] api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_user
from ovtui.core.review_grammar import parse_review_policy
from ovtui.core.splits import TEST_SPLIT

# The name of a registered component (ovtui.wiring.registry): its entry point's name.
ComponentName = Annotated[str, Field(min_length=1, max_length=128)]


class Section(BaseModel):
    # strict: `max_concurrency = true` is not 1, and `epochs = "3"` is not 3.
    model_config = ConfigDict(extra="forbid", strict=True)


class PluginConfig(Section):
    """The base of a plug-in's own ``ovtui.toml`` table: subclass it, name the table in ``TABLE``
    and declare the class as an ``ovtui.config`` entry point of that name. ovtui.toml's table is
    then validated with it (errors name ``[table.key]`` at its line, as ovtui's own sections do),
    and the plug-in reads it with ``config.table(TheModel)``."""

    TABLE: ClassVar[str]


TableT = TypeVar("TableT", bound=PluginConfig)


class LLMConfig(Section):
    # Who does the thinking (a backend: an entry point of ovtui.backends).
    backend: ComponentName = "offline"
    base_url: str = Field("http://127.0.0.1:8000/v1", max_length=2048)
    model: str = Field("gpt-4o-mini", min_length=1, max_length=256)
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    max_concurrency: int = Field(8, ge=1, le=256)
    timeout: float = Field(60.0, gt=0, le=3600)
    temperature: float = Field(0.0, ge=0, le=2)
    max_retries: int = Field(4, ge=0, le=20)
    cache: bool = False
    # Tokens the model's context holds (prompt + answer), for endpoints that do not report it (Ollama's
    # default is 4096; ovtui fits every prompt into it). None: what the endpoint reports, else 4096.
    context_window: int | None = Field(None, ge=1024, le=100_000_000)
    # Price per million tokens, for the cost shown in the app and reports (0 = unknown).
    prompt_price_per_mtok: float = Field(0.0, ge=0, le=1_000_000)
    completion_price_per_mtok: float = Field(0.0, ge=0, le=1_000_000)


MAX_TRIALS = 32  # runs of one eval case ([trainer] eval_trials, --trials)


class TrainerConfig(Section):
    batch_size: int = Field(8, ge=1, le=10_000)
    epochs: int = Field(1, ge=1, le=1_000)
    max_gradients_per_update: int = Field(8, ge=1, le=10_000)
    max_wait_seconds: float = Field(10.0, gt=0, le=86_400)
    rollout_concurrency: int = Field(8, ge=1, le=1_024)
    dataset: str = Field("support", min_length=1, max_length=128)
    # The environment the local datasets' cases are for (an entry point of ovtui.environments): it
    # validates them in `ovtui check`, grades the `llm` agent's rollouts and inbox rollouts without
    # an evaluation.
    environment: ComponentName = "sample"
    # Who runs the cases: an environment's own agent by its name (the scripted sample agent), or an
    # entry point of ovtui.agents (`llm`: one chat call per case; `tau2-replay`).
    agent: ComponentName = "sample"
    # How rollouts reach the engine (entry points of ovtui.trainers): in `train`, and in streaming.
    train_with: ComponentName = "batch"
    stream_with: ComponentName = "streaming"
    # Share of the train split held out to validate plans before they are applied (the `gate`
    # review policy); datasets/<name>/validation.jsonl, when present, is used instead.
    validation: float = Field(0.0, ge=0.0, lt=1.0)
    # Runs of every eval case (baseline, final, eval); above 1 the report gives pass^k.
    eval_trials: int = Field(1, ge=1, le=MAX_TRIALS)


# What kind of change a plan item is, as ``[review] second_approver_for`` names it: a new file, an
# update that only adds lines, a rewrite that removes or changes lines of the file, a delete.
ChangeKind = Literal["new", "update", "rewrite", "delete"]


class ReviewConfig(Section):
    policy: str = "ask"
    dry_run: bool = False
    # Who decides, as records name them (else `--reviewer`, else the OS login).
    reviewer: str | None = Field(None, min_length=1, max_length=64)
    # Changes of these kinds need two different reviewers' approvals before they are applied.
    second_approver_for: list[ChangeKind] = Field(default_factory=list)
    # An OpenSSH allowed-signers file (relative to the workspace): when set, every approval must be
    # signed by a key it lists for the reviewer, and two approvals need two keys (docs/review.md).
    signers: str | None = Field(None, min_length=1)
    # The SSH key this workspace's reviewer signs with (else --key, else ssh-agent); only read.
    key: str | None = Field(None, min_length=1)
    # Also ask the model, one call per plan item with rules for the same situation, which of its lines
    # contradict them (it adds to the offline check, never removes). None: when `[llm] backend` is a
    # model's, not the offline learner.
    model_contradictions: bool | None = None
    # What an agent writes or deletes through the memory API (content/write, DELETE fs): applied at
    # once as OpenViking does ("apply"), or parked for a person in Review ("wait").
    agent_writes: Literal["apply", "wait"] = "apply"

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        parse_review_policy(value)  # its ValueError names what is wrong
        return value


class EvaluationConfig(Section):
    """``[evaluation]``: when a difference between two policies counts, and which splits are sealed."""

    # No longer used: `compare` and the `gate` policy judge by the case (ovtui.train.inference). Kept so
    # an ovtui.toml that sets it still loads.
    k: float = Field(2.0, ge=0, le=10)
    # Splits scored only on explicit request (`--unseal`); each scoring is counted and reported, a
    # guard against tuning to the test. Training, its gate, eval and compare score validation.
    sealed: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=lambda: [TEST_SPLIT], max_length=64
    )


class WorkspaceConfig(Section):
    """``[workspace]``: ``user`` owns the workspace's own space (its memories at the root);
    ``users``, the other users ``ovtui serve`` accepts (``X-OpenViking-User``), each with a space
    of its own under ``users/<user>/``. A user not declared is refused, never created."""

    user: str = Field("default", max_length=64)
    users: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=256)

    @field_validator("users")
    @classmethod
    def _valid_users(cls, users: list[str]) -> list[str]:
        for user in users:
            try:
                validate_user(user, what="[workspace] users:")
            except UnsafePathError as exc:
                raise ValueError(str(exc)) from None
        if len(set(users)) != len(users):
            raise ValueError("[workspace] users names a user twice")
        return users

    @model_validator(mode="after")
    def _owner_not_among_users(self) -> WorkspaceConfig:
        if self.user in self.users:
            raise ValueError(f"[workspace] users names {self.user!r}, the owner ([workspace] user)")
        return self


class UIConfig(Section):
    theme: str = Field("textual-dark", max_length=128)


class RetrievalConfig(Section):
    """``[retrieval]``: how much a memory's hotness (uses, recency) counts next to its relevance."""

    hotness_weight: float = Field(0.0, ge=0, le=1)
    hotness_half_life_days: float = Field(7.0, gt=0, le=3650)


class EmbeddingConfig(Section):
    """``[embedding]``: dense vectors for retrieval from any OpenAI-compatible ``/v1/embeddings``
    endpoint, fused with the lexical score (the section absent: retrieval is lexical). Vectors are
    cached per content hash under ``.ovtui/embeddings/``; the key lives in ``api_key_env``."""

    base_url: str = Field("http://127.0.0.1:8000/v1", max_length=2048, pattern=r"^https?://")
    model: str = Field("text-embedding-3-small", min_length=1, max_length=256)
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    # Asked of the endpoint when set (models that can shorten their vectors); else its own size.
    dimensions: int | None = Field(None, ge=1, le=16_384)
    batch: int = Field(64, ge=1, le=2048)  # texts per request
    timeout: float = Field(30.0, gt=0, le=3600)
    max_retries: int = Field(2, ge=0, le=20)
    # How vectors travel: base64 (little-endian float32, smaller) or a JSON list of floats.
    encoding_format: Literal["base64", "float"] = "base64"
    # The dense share of a hit's score: (1 - weight) · lexical + weight · cosine ("weighted"), or
    # reciprocal-rank fusion of the two rankings ("rrf").
    weight: float = Field(0.5, ge=0, le=1)
    fusion: Literal["weighted", "rrf"] = "weighted"


class TokensConfig(Section):
    """``[tokens]``: the tokenizer that counts the token figures ovtui shows (``ovtui.llm.tokens``):
    OpenAI's ``encoding``, its ranks from ``rank_file`` (workspace-relative; checked against
    ``rank_file_sha256`` when given) or else from tiktoken's cache or a download."""

    encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"
    rank_file: str | None = Field(None, min_length=1, max_length=4096)
    rank_file_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


class AdherenceConfig(Section):
    """``[adherence]``: how the directives of the experiences a rollout used are checked
    (docs/adherence.md)."""

    # Also ask the `[llm]` model, in one call per rollout, about the lines the offline check could
    # not check (its verdicts are marked as the model's). Off: every check is offline, no call made.
    model_judge: bool = False


class SessionsConfig(Section):
    """``[sessions]``: where the ``session-commit`` trainer sends rollouts (an ovtui serve or an
    OpenViking server) and how long it waits for a commit's task; how this workspace's own commits
    write user memories (batching, review)."""

    api_url: str = Field("http://127.0.0.1:1933", max_length=2048, pattern=r"^https?://")
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    commit_timeout: float = Field(600.0, gt=0, le=86_400)
    max_in_flight: int = Field(8, ge=1, le=256)
    # After the session-commit trainer's commits, the experiences the server changed come back as a
    # pending plan of this workspace (read from each commit's memory_diff on the server).
    review_remote: bool = True
    # The trainer of a commit's cases (an entry point of ovtui.trainers that takes rollouts one by
    # one), shared by every commit of the process.
    train_with: ComponentName = "streaming-idle"
    # The user memories a commit extracts: applied at once (OpenViking's way) or parked for Review.
    review_user_memories: bool = False
    max_memory_operations: int = Field(8, ge=1, le=10_000)
    memory_max_wait_seconds: float = Field(10.0, gt=0, le=86_400)


class RemoteDatasetConfig(Section):
    """``[datasets.NAME]``: a dataset whose cases come from a case source other than the local
    ``datasets/NAME/*.jsonl``: a benchmark service (``ovtui env serve``) unless ``source`` names another.

    ``url`` is one URL or a list: executions spread over them (the remote source needs one).
    ``split``, when set, is the one split the service is asked for (train and eval alike);
    otherwise train uses "train" and eval the split asked for. The key lives in the environment
    variable ``api_key_env`` names.
    """

    # Where its cases come from (an entry point of ovtui.case_sources): a benchmark service by default.
    source: ComponentName = "remote"
    url: str | list[str] | None = None
    split: str | None = None
    dataset: str | None = None
    domain: str | None = None
    filters: dict[str, Any] = Field(default_factory=dict)
    api_key_env: str | None = None
    max_in_flight: int = Field(32, ge=1, le=1024)
    timeout: float = Field(600.0, gt=0)  # one case, from submit to result
    request_timeout: float = Field(60.0, gt=0)  # one request, its answer read whole
    # Seconds before a failed request is tried again (a transport error, 408, 429, 5xx); each next
    # wait doubles, up to 2 s.
    retry_delay: float = Field(0.05, gt=0, le=2.0)
    max_pages: int = Field(1000, ge=1)  # of the case query: paging stops with an error past it

    @field_validator("url")
    @classmethod
    def _http_urls(cls, value: str | list[str]) -> str | list[str]:
        urls = [value] if isinstance(value, str) else value
        if not urls:
            raise ValueError("give at least one URL")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return value

    @property
    def urls(self) -> list[str]:
        return [self.url] if isinstance(self.url, str) else list(self.url or [])


class OvtuiConfig(Section):
    llm: LLMConfig = Field(default_factory=LLMConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    ui: UIConfig = Field(default_factory=UIConfig)
    keys: dict[str, str] = Field(default_factory=dict, max_length=256)
    datasets: dict[str, RemoteDatasetConfig] = Field(default_factory=dict)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    tokens: TokensConfig = Field(default_factory=TokensConfig)
    adherence: AdherenceConfig = Field(default_factory=AdherenceConfig)
    # Dense retrieval: present only when the workspace names an embeddings endpoint.
    embedding: EmbeddingConfig | None = None
    # The plug-ins' own tables, by name, as ovtui.toml gives them (each validated by its plug-in's
    # model when the file is read: ``ovtui.storage.config_file``); written back as they were.
    _tables: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

    def table(self, model: type[TableT]) -> TableT:
        """A plug-in's table (``[model.TABLE]``), its defaults where ovtui.toml has none."""
        return model.model_validate(self._tables.get(model.TABLE, {}))

    def has_table(self, name: str) -> bool:
        return name in self._tables

    def plugin_tables(self) -> dict[str, dict[str, Any]]:
        """Every plug-in table as ovtui.toml gives it."""
        return dict(self._tables)

    def with_tables(self, tables: dict[str, dict[str, Any]]) -> OvtuiConfig:
        """This configuration holding ``tables`` (already validated by their plug-ins)."""
        self._tables = dict(tables)
        return self
