"""The Experiences screen: the policy set (name, status, version, last change, links) and one file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Label

from ovtui.agent_reading import unread_notes
from ovtui.app.messages import ExperiencesChanged
from ovtui.app.screens.base import MainScreen
from ovtui.app.services import ScreenServices
from ovtui.app.widgets.text_markdown import TextMarkdown
from ovtui.app.widgets.vim_table import VimTable
from ovtui.domain import Experience, ExperienceSet
from ovtui.errors import OvtuiError

PREVIEW_ROWS = 60  # a screenful or two: reading them must take well under 0.2 s


@dataclass(frozen=True)
class ExperienceRow:
    experience: Experience
    changed: str
    links: int

    def cells(self) -> tuple[str, str, str, str, str]:
        e = self.experience
        return e.name, e.status.value, str(e.version), self.changed, str(self.links)


def changed_at(path: str) -> str:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return "?"


class ExperiencesScreen(MainScreen):
    KEY = "experiences"
    AUTO_FOCUS = "#experiences"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+l", "reload", "Reload", id="experiences.reload"),
        Binding("l", "focus_view", "Read", id="experiences.read", show=False),
        Binding("h", "focus_table", "List", id="experiences.list", show=False),
    ]

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.rows: dict[str, ExperienceRow] = {}
        self.shown: str | None = None
        # The last full load: a reload re-reads only the files that changed since (an apply
        # touches a few of 10,000).
        self._loaded: ExperienceSet | None = None

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        yield Label("loading experiences…", id="experiences-title", classes="pane-title")
        with Horizontal(id="experiences-body"):
            yield VimTable(id="experiences")
            with VerticalScroll(id="experience-view"):
                yield TextMarkdown(id="experience-markdown")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#experiences", VimTable)
        table.add_columns("name", "status", "version", "changed (UTC)", "links")
        self.action_reload()

    def action_reload(self) -> None:
        self._load()

    def on_experiences_changed(self, _: ExperiencesChanged) -> None:
        self.reload_soon(self._load)

    def on_stale_view(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="experiences")
    def _load(self) -> None:
        """Reads every file in a thread: 10,000 experiences must not hold up the screen.

        The first load shows the first rows at once, before reading the rest; later loads are
        incremental.
        """
        loader = self.workspace.loader
        try:
            if self._loaded is None:
                preview = [self._row(e) for e in loader.first(PREVIEW_ROWS)]
                self.app.call_from_thread(self._fill_preview, preview)
            policy_set = self._loaded = loader.load_sync(self._loaded)
            rows = [self._row(e) for e in policy_set.policies]
        except (OvtuiError, OSError) as exc:
            self.app.call_from_thread(self.report_error, "loading experiences", exc)
            return
        problems = list(policy_set.metadata.get("problems", []))
        self.app.call_from_thread(self._fill, rows, problems)

    def _row(self, experience: Experience) -> ExperienceRow:
        path = str(self.workspace.paths.path_for(experience.uri))
        return ExperienceRow(experience, changed_at(path), len(experience.metadata.get("links") or []))

    def _fill_preview(self, rows: list[ExperienceRow]) -> None:
        if self.rows:  # the full list arrived first
            return
        self.query_one("#experiences", VimTable).fill([(row.experience.name, row.cells()) for row in rows])
        self.query_one("#experiences-title", Label).update(f"loading experiences… (first {len(rows)} shown)")

    def _fill(self, rows: list[ExperienceRow], problems: list[str]) -> None:
        table = self.query_one("#experiences", VimTable)
        self.rows = {row.experience.name: row for row in rows}
        table.fill([(row.experience.name, row.cells()) for row in rows])
        title = f"{len(rows)} experiences"
        if problems:
            title += f" · {len(problems)} unreadable file(s): {problems[0]}"
        self.query_one("#experiences-title", Label).update(title)
        self.shown = None
        self._show(table.selected_key or (rows[0].experience.name if rows else None))

    @on(DataTable.RowHighlighted, "#experiences")
    def _experience_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            name = str(event.row_key.value)
            self.follow_cursor(lambda: self._show(name))

    def _show(self, name: str | None) -> None:
        if name == self.shown:
            return
        self.shown = name
        row = self.rows.get(name or "")
        view = self.query_one("#experience-markdown", TextMarkdown)
        if row is None:
            view.update("*no experience selected*")
            return
        e = row.experience
        facts = (
            f"**{e.name}** · {e.status.value} · version {e.version} · {row.links} link(s) · "
            f"`{self.relative(e.uri)}`"
        )
        unread = unread_notes(self.workspace.config.trainer.agent, e.content)
        flags = "".join(f"\n\n> ⚠ {note}" for _, note in unread)
        view.update(f"{facts}{flags}\n\n---\n\n{e.content}")

    def action_focus_view(self) -> None:
        self.query_one("#experience-view").focus()

    def action_focus_table(self) -> None:
        self.query_one("#experiences", VimTable).focus()
