"""What one workspace makes once and every run shares: the pending plans, the experience loader,
the history store, the use ledger, the reviewers' feedback, the retrieval index, the session
store, the LLM client, the environments and the backend's seams — each on first need. It is what
a plug-in's factory is handed (it implements ``Resources``); the builder (``composition``)
assembles each run's parts on top of it.

Nothing heavy is imported at module level: a workspace opened to read its history builds the
store and the history and never loads the engine.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ovtui.wiring.registry import BACKENDS, ENVIRONMENTS

if TYPE_CHECKING:
    from pathlib import Path

    from ovtui.core.config import OvtuiConfig
    from ovtui.core.decisions import RejectionSource
    from ovtui.core.events import EventBus
    from ovtui.llm.client import LLMClient
    from ovtui.llm.tokens import TokenCounter
    from ovtui.llm.usage import CallUsage
    from ovtui.memory.history import HistoryStore
    from ovtui.memory.hotness import HotnessMix
    from ovtui.memory.ledger import UseLedger
    from ovtui.memory.retrieval.service import Retrieval, SummaryKind
    from ovtui.memory.store import MemoryStore
    from ovtui.plugins.backends import Backends
    from ovtui.plugins.environment import Environment
    from ovtui.plugins.resources import Backend
    from ovtui.sessions.store import SessionStore
    from ovtui.storage.event_log import EventLog
    from ovtui.storage.jobs import JobStore
    from ovtui.train.adherence.recorder import AdherenceRecorder
    from ovtui.train.components.experience_set_loader import ExperienceSetLoader
    from ovtui.train.review.pending import PendingPlans


class SharedParts:
    """The parts of one workspace that are made once and shared by every run and caller."""

    def __init__(self, config: OvtuiConfig, store: MemoryStore) -> None:
        self.config = config
        self.store = store
        self.paths = store.paths
        self._llm: LLMClient | None = None
        self._environments: dict[str, Environment] = {}
        self._tokens: TokenCounter | None = None
        self.run_events: EventBus | None = None  # where the LLM client's usage goes during a run

    # --- the shared parts, each made once -----------------------------------------------------------
    @cached_property
    def pending(self) -> PendingPlans:
        from ovtui.train.review.pending import PendingPlans

        return PendingPlans(self.store, second_approver_for=self.config.review.second_approver_for)

    @cached_property
    def loader(self) -> ExperienceSetLoader:
        from ovtui.train.components.experience_set_loader import ExperienceSetLoader

        return ExperienceSetLoader(self.store)

    @cached_property
    def history(self) -> HistoryStore:
        from ovtui.memory.history import HistoryStore

        return HistoryStore(self.paths)

    @cached_property
    def _ledger(self) -> UseLedger:
        from ovtui.memory.ledger import UseLedger

        return UseLedger(self.paths)

    @cached_property
    def adherence(self) -> AdherenceRecorder:
        """Where each use's directives are checked and recorded: the environment's reading of
        them when it has one (``[trainer] environment``), else ovtui's over the tools it names;
        with ``[adherence] model_judge``, the model judges the lines left unchecked."""
        from ovtui.core.errors import OvtuiError
        from ovtui.train.adherence.recorder import AdherenceRecorder, DirectiveReader
        from ovtui.train.adherence.store import AdherenceStore

        try:
            environment: object = self.environment()
        except OvtuiError:
            environment = None  # its data not installed here: ovtui's reading of the lines
        schemas = getattr(environment, "tool_schemas", lambda: None)() or []
        tools = [str(s.get("name")) for s in schemas if isinstance(s, dict) and s.get("name")]
        judge = None
        if self.config.adherence.model_judge:  # the model asked about the lines left unchecked
            from ovtui.train.adherence.judge import ModelJudge

            judge = ModelJudge(self.llm)
        return AdherenceRecorder(AdherenceStore(self.paths), DirectiveReader(environment, tools), judge)

    @cached_property
    def _feedback(self) -> RejectionSource:
        from ovtui.train.review.feedback import ReviewFeedback

        return ReviewFeedback(self.paths.root)

    @cached_property
    def sessions(self) -> SessionStore:
        from ovtui.sessions.store import SessionStore

        return SessionStore(self.paths)

    @cached_property
    def retrieval(self) -> Retrieval:
        from ovtui.memory.retrieval.ranking import Fusion
        from ovtui.memory.retrieval.service import Retrieval

        embedding, llm = self.config.embedding, self.config.llm
        embedder = None
        if embedding is not None:
            from ovtui.llm.embeddings import OpenAIEmbedder

            embedder = OpenAIEmbedder(embedding)
        hot = self.hotness()
        return Retrieval(
            self.store,
            embedder=embedder,
            fusion=Fusion(embedding.weight, embedding.fusion) if embedding is not None else None,
            mix=hot.mixed if hot.weight > 0 else None,
            summarize=self._summarize if self.backend().uses_model else None,
            summary_model=f"{llm.base_url}\n{llm.model}",
        )

    async def _summarize(self, kind: SummaryKind, text: str) -> str:
        from ovtui.memory.retrieval.service import SUMMARY_PROMPTS

        messages = [{"role": "system", "content": SUMMARY_PROMPTS[kind]}, {"role": "user", "content": text}]
        answer, _ = await self.llm().complete_text("retrieval_summary", messages)
        return answer

    def session_tasks(self, folder: Path | None = None, *, prefix: str) -> JobStore:
        """A job store of commits running in the background (by default under the state folder);
        each server keeps its own."""
        from ovtui.sessions.overview import TASKS_DIR
        from ovtui.storage.jobs import JobStore

        return JobStore(folder or self.paths.state / TASKS_DIR, prefix=prefix)

    def event_log(self, run_id: str) -> EventLog:
        """A listener writing a run's events to its log under ``runs/``."""
        from ovtui.storage.event_log import EventLog

        return EventLog(self.paths, run_id)

    async def token_counter(self) -> TokenCounter:
        """What counts the token figures shown (``[tokens]``): a real tokenizer where one loads,
        else the estimate, labelled; loaded once (a rank file read or downloaded in a thread)."""
        import asyncio

        from ovtui.llm.tokens import token_counter

        if self._tokens is None:
            self._tokens = await asyncio.to_thread(token_counter, self.config.tokens, self.paths.root)
        return self._tokens

    # --- Resources: what a plug-in's factory builds from --------------------------------------------
    def llm(self) -> LLMClient:
        """The workspace's one LLM client (``[llm]``), made on first use: offline runs never build it."""
        if self._llm is None:
            from ovtui.llm.capabilities import CapabilityMemory
            from ovtui.llm.client import LLMClient

            cache = self.paths.state / "llm_cache" if self.config.llm.cache else None
            memory = CapabilityMemory(self.paths.root)
            self._llm = LLMClient(
                self.config.llm, cache_dir=cache, on_call=self._report_usage, capability_memory=memory
            )
        return self._llm

    def forget_llm_client(self) -> None:
        """After the client was closed (``doctor`` closes the one it probed with): the next use gets
        a new one."""
        self._llm = None

    def environment(self, name: str | None = None) -> Environment:
        """The environment ``name`` — by default ``[trainer] environment``, the one the local
        datasets' cases are for (it validates and grades them) — built once."""
        name = name or self.config.trainer.environment
        if name not in self._environments:
            self._environments[name] = ENVIRONMENTS.get(name)(self.config)
        return self._environments[name]

    def ledger(self) -> UseLedger:
        """The workspace's one use ledger (it keeps what it read, so the next read folds only what
        was appended since)."""
        return self._ledger

    def review_feedback(self) -> RejectionSource:
        """What reviewers of this workspace turned down, for the learners: one reader for all."""
        return self._feedback

    def hotness(self) -> HotnessMix:
        """Where an agent records the memories it retrieves, and how much their hotness weighs."""
        from ovtui.memory.hotness import HotnessMix

        cfg = self.config.retrieval
        return HotnessMix(self._ledger, cfg.hotness_weight, cfg.hotness_half_life_days)

    def on_retry(self, url: str, attempt: int, attempts: int, reason: str) -> None:
        """Where a case source reports a failed try of its service (a run shows it while it connects)."""
        if self.run_events is not None:
            retry = {"url": url, "attempt": attempt, "attempts": attempts, "reason": reason}
            message = f"{url}: try {attempt} of {attempts} failed ({reason}); trying again"
            self.run_events.emit("log", message=message, level="warning", retry=retry)

    async def aclose(self) -> None:
        """Close the running loop's connections of the LLM client, the embedder and the environments."""
        from ovtui.plugins.environment import close_environment

        if self._llm is not None:
            await self._llm.aclose()
        if "retrieval" in self.__dict__:
            await self.retrieval.aclose()
        for environment in list(self._environments.values()):
            await close_environment(environment)

    def _report_usage(self, stage: str, usage: CallUsage, latency: float) -> None:
        if self.run_events is not None:
            self.run_events.emit("usage", **usage.to_event(), latency=latency)

    def usage(self) -> dict[str, dict[str, float | int]]:
        """What the LLM client's calls cost so far, by stage (nothing when no call was made)."""
        if self._llm is None:
            return {}
        return dict(self._llm.usage.snapshot())

    # --- the backend -----------------------------------------------------------------------------------
    def backend(self, name: str | None = None) -> Backend:
        """The backend ``name`` (default ``[llm] backend``), as it describes itself (nothing built)."""
        return BACKENDS.get(name or self.config.llm.backend)

    def backend_label(self) -> str:
        """The backend's label, and the model where it uses one (``offline``, ``llm:gpt-4o-mini``)."""
        backend = self.backend()
        return f"{backend.label}:{self.config.llm.model}" if backend.uses_model else backend.label

    @cached_property
    def _backends(self) -> Backends:
        return self.backend().build(self)

    def backends(self) -> Backends:
        """The backend's seams, built once."""
        return self._backends
