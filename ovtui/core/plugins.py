"""Extensions that other packages declare: entry points (``importlib.metadata``).

A distribution adds an environment, an agent, a case source, a trainer, a backend or a folder of
memory types by declaring an entry point in one of ovtui's groups (``ovtui.wiring.registry`` and
``ovtui.memory.types`` read them); ovtui's own built-ins are declared the same way, in its
pyproject.toml. Names are listed without importing anything; an entry point is imported when it is
first used, and one that cannot be imported is one ConfigError line naming its distribution and
entry point — never a traceback.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from itertools import chain

from ovtui.core.errors import ConfigError


@cache
def _every_entry_point() -> EntryPoints:
    # One scan of the installed distributions for all of ovtui's groups: each scan reads every
    # distribution's entry_points.txt, ~10 ms a group on a venv like the test extra's.
    every = entry_points()
    # Python 3.11 answers a (deprecated) dict of groups, 3.12 the entry points themselves.
    if isinstance(every, EntryPoints):
        return every
    return EntryPoints(chain.from_iterable(every.select(group=group) for group in every.groups))


@cache
def declared(group: str) -> dict[str, tuple[EntryPoint, ...]]:
    """The entry points of ``group`` by name (a name two distributions declare has two)."""
    found: dict[str, tuple[EntryPoint, ...]] = {}
    for entry in _every_entry_point().select(group=group):
        found[entry.name] = (*found.get(entry.name, ()), entry)
    return found


def rescan() -> None:
    """Read the installed distributions again (after one was added to ``sys.path`` in-process)."""
    _every_entry_point.cache_clear()
    declared.cache_clear()


def distribution(entry: EntryPoint) -> str:
    """Who declared ``entry``: its distribution's name and version."""
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"


def load(entry: EntryPoint) -> object:
    """The object ``entry`` names, imported now; any failure is one line naming where it came from."""
    try:
        return entry.load()
    except Exception as exc:  # a third party's module may fail in any way: it is its problem, told once
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ConfigError(
            f"the entry point {entry.name} = {entry.value!r} (group {entry.group}) of "
            f"{distribution(entry)} cannot be loaded: {reason}"
        ) from None
