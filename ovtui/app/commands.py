"""The command palette: every binding active on the screen below it (the focused widget's, the
screen's and the app's, with ``[keys]`` remaps applied by Textual), then the other main screens'
own, which show that screen first; each named by where it belongs as the help names it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode

from ovtui.app.keys import own_bindings
from ovtui.app.registry import SCREENS, binding_sources


@dataclass(frozen=True)
class BindingCommand:
    title: str
    help: str
    owner: DOMNode
    binding: Binding


def context_name(owner: DOMNode) -> str:
    """Where a binding belongs, as the help names it ("Lists", not the widget's class)."""
    if isinstance(owner, App):
        return "App"
    names = {node_class: name for name, node_class in binding_sources(App)}
    for node_class in type(owner).__mro__:
        if node_class in names:
            return names[node_class]
    return type(owner).__name__.removesuffix("Screen")


class BindingCommands(Provider):
    def _commands(self) -> list[BindingCommand]:
        found: dict[str, BindingCommand] = {}
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.id or not active.enabled or binding.id in found:
                continue
            keys = self.app.get_key_display(binding)
            title = f"{binding.description} ({context_name(active.node)})"
            found[binding.id] = BindingCommand(title, f"{keys} · {binding.id}", active.node, binding)
        return list(found.values())

    def _elsewhere(self) -> list[tuple[str, BindingCommand]]:
        """The own bindings of the main screens not shown now, with the mode that shows each."""
        found = []
        for entry in SCREENS:
            if isinstance(self.screen, entry.screen):
                continue
            for binding in own_bindings(entry.screen):
                keys = self.app.get_key_display(binding)
                title = f"{binding.description} ({entry.title})"
                found.append((entry.key, BindingCommand(title, f"{keys} · {binding.id}", self.app, binding)))
        return found

    def _run(self, owner: DOMNode, action: str) -> None:
        self.app.call_later(self.app.run_action, action, owner)

    def _run_on(self, mode: str, action: str) -> None:
        async def show_then_run() -> None:
            await self.app.run_action(f"show({mode!r})")
            await self.app.run_action(action, self.app.screen)

        self.app.call_later(show_then_run)

    def _runnable(self) -> list[tuple[BindingCommand, partial[None]]]:
        here = [(c, partial(self._run, c.owner, c.binding.action)) for c in self._commands()]
        there = [(c, partial(self._run_on, mode, c.binding.action)) for mode, c in self._elsewhere()]
        return here + there

    async def discover(self) -> Hits:
        for command, run in self._runnable():
            yield DiscoveryHit(command.title, run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command, run in self._runnable():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), run, help=command.help)
