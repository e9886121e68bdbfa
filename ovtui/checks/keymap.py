"""Checking ``[keys]`` of ovtui.toml against the bindings the app declares (for ``ovtui check``).

The kernel never imports Textual, so the bindings come in as plain data (``DeclaredBinding``; the
app's ``keys.declared_bindings`` makes them from its ``BINDINGS``). Two mistakes are reported: an id
that names no binding (a typo silently does nothing), and one key given two actions in one screen
(only one of them would ever run). A main screen shares its keys with the app-wide bindings and the
lists inside it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ovtui.core.suggest import closest

APP_CONTEXT = "App"
SHARED_CONTEXTS = (APP_CONTEXT, "Lists")  # active on every main screen


@dataclass(frozen=True)
class DeclaredBinding:
    context: str  # "App", a screen's title, "Lists", "Dialogs", ...
    id: str
    keys: tuple[str, ...]
    main_screen: bool = False  # its context is a main screen (shares keys with SHARED_CONTEXTS)


def _keys(spec: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in spec.split(",") if k.strip())


def keymap_problems(keymap: dict[str, str], declared: list[DeclaredBinding]) -> list[tuple[str, str]]:
    """``(binding id, message)`` for each unknown id and each key with two actions in one screen."""
    problems: list[tuple[str, str]] = []
    known = [b.id for b in declared]
    for binding_id in keymap:
        if binding_id not in known:
            close = closest(binding_id, known)
            hint = f" (did you mean {close!r}?)" if close else " (`?` in the app lists the ids)"
            problems.append((binding_id, f"[keys] {binding_id!r} is not a binding id{hint}"))
    effective = [
        DeclaredBinding(b.context, b.id, _keys(keymap[b.id]) if b.id in keymap else b.keys, b.main_screen)
        for b in declared
    ]
    screens = sorted({b.context for b in effective if b.main_screen})
    groups = {screen: [b for b in effective if b.context in (screen, *SHARED_CONTEXTS)] for screen in screens}
    for context in sorted({b.context for b in effective} - set(screens) - set(SHARED_CONTEXTS)):
        groups[context] = [b for b in effective if b.context == context]
    reported: set[tuple[str, ...]] = set()
    for context, bindings in groups.items():
        by_key: dict[str, list[str]] = defaultdict(list)
        for binding in bindings:
            for key in binding.keys:
                by_key[key].append(binding.id)
        for key, ids in sorted(by_key.items()):
            remapped = [i for i in ids if i in keymap]
            if len(ids) > 1 and remapped and (key, *ids) not in reported:
                reported.add((key, *ids))
                problems.append(
                    (
                        remapped[0],
                        f"[keys] key {key!r} has two actions in {context}: {', '.join(sorted(ids))}",
                    )
                )
    return problems
