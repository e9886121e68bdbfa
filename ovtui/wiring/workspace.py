"""The one object the CLI, the app and the servers open: a workspace folder, its configuration,
and the use-case services that act on it.

- ``runs``: train, evaluate, stream (``ovtui.wiring.services.runs``);
- ``measures``: compare, utility, drift and revalidation, the endpoint's doctor
  (``services.measures``);
- ``review``: the plans waiting for a person, decisions, edits, apply, re-plan, discard, revert
  (``services.review``);
- ``reading``: memories, history, the use ledger, reports, sessions, datasets, changes to watch
  (``services.reading``);
- ``agent``: what an agent reads back and hands in — find, search, read, listings, a session's
  context, archives, deletion, the use ledger's records, conversations committed
  (``services.agent``).

Every part behind them is constructed once by the builder (``ovtui.wiring.composition``), on first
need: opening a workspace to read its history builds the store and the history, never the
engine. Nothing here knows about Textual.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from ovtui.core.config import OvtuiConfig
from ovtui.core.errors import ConfigError
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config, save_config
from ovtui.storage.opening import recover_on_start, require_workspace
from ovtui.storage.paths import CONFIG_FILE, WorkspacePaths
from ovtui.wiring.composition import Composition
from ovtui.wiring.registry import check_names, names_too
from ovtui.wiring.services.agent import AgentAPI
from ovtui.wiring.services.measures import Measures
from ovtui.wiring.services.reading import Reading
from ovtui.wiring.services.review import Review
from ovtui.wiring.services.run_frame import RunFrame
from ovtui.wiring.services.runs import Runs, TrainOptions

__all__ = ["TrainOptions", "Workspace", "memory_to_check", "open_memory"]


def open_memory(root: Path, user: str, *, reading: bool = False) -> tuple[MemoryStore, str | None]:
    """A workspace folder's memory, once what a crash interrupted (an apply) is finished; and what
    that recovery did, for the CLI and the app to show. ``reading``: the caller only reads, so a
    recovery the disk refuses (full, read-only) is said, not raised."""
    store = MemoryStore(WorkspacePaths(root, user))
    return store, recover_on_start(store.paths, store.lock, reading=reading)


def memory_to_check(root: Path | str) -> tuple[MemoryStore, str | None]:
    """The memory of a workspace for ``ovtui check``, opened as a workspace opens it, and even when
    its ovtui.toml does not read (the check reports that itself; the user is then the default)."""
    root = Path(root)
    require_workspace(root)
    try:
        user = load_config(root).workspace.user
    except ConfigError:
        user = OvtuiConfig().workspace.user
    return open_memory(root, user, reading=True)


class Workspace:
    def __init__(self, root: Path | str, config: OvtuiConfig | None = None, *, reading: bool = False) -> None:
        """``reading``: opened to read only (history, a plan's listing), so on a full or read-only
        disk a recovery that cannot be finished is said in ``recovered`` instead of raised."""
        root = Path(root)
        require_workspace(root)
        try:
            self.config = config or load_config(root)
        except ConfigError as exc:
            raise names_too(exc) from None
        check_names(self.config, root / CONFIG_FILE)
        store, self.recovered = open_memory(root, self.config.workspace.user, reading=reading)
        self.parts = Composition(self.config, store)

    @property
    def root(self) -> Path:
        return self.parts.paths.root

    @property
    def backend_label(self) -> str:
        """Who does the thinking, as the app and reports name it: the backend's own label, and the
        model where it uses one (``offline``, ``llm:gpt-4o-mini``)."""
        return self.parts.backend_label()

    @property
    def uses_model(self) -> bool:
        """Whether the backend calls the ``[llm]`` model (its runs then have tokens and cost)."""
        return self.parts.backend().uses_model

    @cached_property
    def _frame(self) -> RunFrame:
        return RunFrame(self.parts)

    @cached_property
    def runs(self) -> Runs:
        return Runs(self.parts, self._frame)

    @cached_property
    def measures(self) -> Measures:
        return Measures(self.parts, self._frame, self.reading)

    @cached_property
    def review(self) -> Review:
        return Review(self.parts)

    @cached_property
    def reading(self) -> Reading:
        return Reading(self.parts, self._frame)

    @cached_property
    def agent(self) -> AgentAPI:
        return AgentAPI(self.parts)

    def save_theme(self, theme: str) -> None:
        """Remember the app's theme in ovtui.toml (``OSError`` when it cannot be written)."""
        if self.config.ui.theme == theme:
            return
        self.config.ui.theme = theme
        save_config(self.root, self.config)

    async def aclose(self) -> None:
        """Close the connections this workspace's clients opened in the running event loop (the
        LLM's, the embeddings', an environment's own models'). Call it where a loop that used the
        workspace ends: a command, a run's worker, a server, the app. The next use, in that loop or
        another, opens new ones."""
        await self.parts.aclose()
