"""The command palette: every binding of the screen below it and of the app, as commands."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from ovtui.app.keys import key_display, own_bindings


class BindingCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Any, Binding]]:
        app = self.app
        keymap: dict[str, str] = getattr(app, "keymap", {})
        screen = self.screen
        found: list[tuple[str, str, Any, Binding]] = []
        for owner in (screen, app):
            for binding in own_bindings(type(owner)):
                name, params = binding.action.partition("(")[0], ()
                if owner.check_action(name, params) is False:
                    continue
                context = "App" if owner is app else type(owner).__name__.removesuffix("Screen")
                title = f"{binding.description} ({context})"
                found.append((title, f"{key_display(app, binding, keymap)} · {binding.id}", owner, binding))
        return found

    def _run(self, owner: Any, action: str) -> None:
        self.app.call_later(owner.run_action, action)

    async def discover(self) -> Hits:
        for title, help_text, owner, binding in self._commands():
            yield DiscoveryHit(title, partial(self._run, owner, binding.action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, owner, binding in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self._run, owner, binding.action), help=help_text
                )
