"""Every binding of the app, as the help screen and the command palette list them.

Generated from the ``BINDINGS`` of the app, the screens and the widgets, with the keymap from
``[keys]`` applied, so the help can never drift from what the keys do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode


@dataclass(frozen=True)
class BindingInfo:
    context: str
    keys: str
    id: str
    description: str
    action: str


def own_bindings(node_class: type[DOMNode]) -> list[Binding]:
    """The class's own bindings that carry an id (the ones a keymap can move)."""
    found = []
    for item in node_class.__dict__.get("BINDINGS", []):
        if isinstance(item, Binding) and item.id:
            found.append(item)
    return found


def key_display(app: App[Any], binding: Binding, keymap: dict[str, str]) -> str:
    keys = keymap.get(binding.id or "", binding.key)
    return " / ".join(app.get_key_display(replace(binding, key=key.strip())) for key in keys.split(","))


def catalog(
    app: App[Any], sources: list[tuple[str, type[DOMNode]]], keymap: dict[str, str]
) -> list[BindingInfo]:
    return [
        BindingInfo(
            context, key_display(app, binding, keymap), binding.id or "", binding.description, binding.action
        )
        for context, node_class in sources
        for binding in own_bindings(node_class)
    ]
