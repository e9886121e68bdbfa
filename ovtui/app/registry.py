"""The one list of main screens: the app's modes, the tab bar, the screen keys, the help and the
command palette all derive from ``SCREENS``.

Adding a screen is one ``ScreenEntry`` here (plus the screen's module): its mode is ``key``, its tab
reads ``"<hotkey> <title>"``, its key binding has the id ``app.<key>_screen`` (remappable under
``[keys]``), and the help lists its ``BINDINGS`` under ``title``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.dom import DOMNode

from ovtui.app.screens.base import MainScreen
from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.screens.compare import CompareScreen
from ovtui.app.screens.confirm import ConfirmModal, NoteModal
from ovtui.app.screens.dataset_picker import DatasetPicker
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.history import HistoryScreen
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.screens.run import RunScreen
from ovtui.app.screens.sessions import SessionsScreen
from ovtui.app.screens.stands import StandsModal
from ovtui.app.services import Tab
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable


@dataclass(frozen=True)
class ScreenEntry:
    key: str  # the mode name, and the stem of the binding id app.<key>_screen
    title: str
    hotkey: str
    screen: type[MainScreen]
    shows_pending: bool = False  # the tab shows the number of pending plans
    # In the tab bar: the bar holds five tabs at the 80-column floor, so a screen reached less often
    # is shown by its key and the palette only.
    in_tab_bar: bool = True

    @property
    def binding_id(self) -> str:
        return f"app.{self.key}_screen"


SCREENS: tuple[ScreenEntry, ...] = (
    ScreenEntry("run", "Run", "1", RunScreen),
    ScreenEntry("review", "Review", "2", ReviewScreen, shows_pending=True),
    ScreenEntry("history", "History", "3", HistoryScreen),
    ScreenEntry("memories", "Memories", "4", MemoriesScreen),
    ScreenEntry("sessions", "Sessions", "5", SessionsScreen),
    ScreenEntry("compare", "Compare", "C", CompareScreen, in_tab_bar=False),
)

# Bindings that belong to no main screen, in the order the help lists them (after the screens).
OTHER_BINDINGS: tuple[tuple[str, type[DOMNode]], ...] = (
    ("Lists", VimTable),
    ("Diff", FieldDiff),
    ("Evidence", EvidenceScreen),
    ("Cases", CaseResultsScreen),
    ("Dialogs", ConfirmModal),
    ("Note", NoteModal),
    ("Datasets", DatasetPicker),
    ("Which stands", StandsModal),
    ("Help", HelpScreen),
)


def screen_bindings() -> list[Binding]:
    # show=False: the tab bar already names each key, and the footer's room goes to the screen's keys.
    return [Binding(e.hotkey, f"show('{e.key}')", e.title, id=e.binding_id, show=False) for e in SCREENS]


def tabs(keymap: dict[str, str]) -> tuple[Tab, ...]:
    """The tab bar, each tab named with the key that shows it (after ``[keys]`` remaps)."""
    return tuple(
        Tab(e.key, f"{keymap.get(e.binding_id, e.hotkey).split(',')[0].strip()} {e.title}", e.shows_pending)
        for e in SCREENS
        if e.in_tab_bar
    )


def binding_sources(app_class: type[DOMNode]) -> list[tuple[str, type[DOMNode]]]:
    """Where the help reads the bindings from, in order: the app, each screen, the rest."""
    return [("App", app_class), *((e.title, e.screen) for e in SCREENS), *OTHER_BINDINGS]
