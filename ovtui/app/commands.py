"""The command palette: every binding active on the screen below it (the focused widget's, the
screen's and the app's, with ``[keys]`` remaps applied by Textual), as commands."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode


@dataclass(frozen=True)
class BindingCommand:
    title: str
    help: str
    owner: DOMNode
    binding: Binding


def context_name(owner: DOMNode) -> str:
    return "App" if isinstance(owner, App) else type(owner).__name__.removesuffix("Screen")


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

    def _run(self, owner: DOMNode, action: str) -> None:
        self.app.call_later(self.app.run_action, action, owner)

    async def discover(self) -> Hits:
        for command in self._commands():
            run = partial(self._run, command.owner, command.binding.action)
            yield DiscoveryHit(command.title, run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                run = partial(self._run, command.owner, command.binding.action)
                yield Hit(score, matcher.highlight(command.title), run, help=command.help)
