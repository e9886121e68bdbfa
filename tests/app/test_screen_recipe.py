"""A new screen is a MainScreen subclass plus one ScreenEntry: its mode, tab, key binding (with an id
that ``[keys]`` can remap) and help section follow from the entry, with nothing else changed.

The entry is added in a fresh interpreter before the app is imported (the app reads the registry
when its class is made), and the app is driven there with Pilot.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from app_support import make_workspace

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from textual.binding import Binding
    from textual.widgets import Static

    from ovtui.app import registry
    from ovtui.app.screens.base import MainScreen


    class NotesScreen(MainScreen):
        KEY = "notes"
        BINDINGS = [Binding("x", "shout", "Shout", id="notes.shout")]

        def compose(self):
            yield self.top_bar()
            yield Static("notes go here", id="notes-body")

        def action_shout(self):
            self.query_one("#notes-body", Static).update("shouted")


    registry.SCREENS = (*registry.SCREENS, registry.ScreenEntry("notes", "Notes", "6", NotesScreen))

    from ovtui.app.app import OvtuiApp
    from ovtui.app.keys import catalog, own_bindings
    from ovtui.wiring.workspace import Workspace


    async def main():
        app = OvtuiApp(Workspace(sys.argv[1]))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("6")
            await pilot.pause()
            assert isinstance(app.screen, NotesScreen) and app.current_mode == "notes", app.screen
            assert "6 Notes" in str(app.screen.query_one("#tabs").render())
            await pilot.press("x")
            await pilot.pause()
            assert "shouted" in str(app.screen.query_one("#notes-body", Static).render())
            assert "app.notes_screen" in {b.id for b in own_bindings(OvtuiApp)}
            contexts = {i.context for i in catalog(app, registry.binding_sources(OvtuiApp), app.keymap)}
            assert "Notes" in contexts, contexts
        print("ok")


    asyncio.run(main())
    """
)


def test_a_screen_is_one_module_and_one_registry_entry(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(workspace.root)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("ok")
