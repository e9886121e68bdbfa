"""Keys: remaps from [keys], the generated help, the command palette, the remembered theme."""

from __future__ import annotations

from app_support import PLAN_ID, MakeApp, notifications, park_demo_plan, press_and_settle, settle

from ovtui.app.app import OvtuiApp
from ovtui.app.commands import BindingCommands
from ovtui.app.keys import catalog, own_bindings
from ovtui.app.registry import SCREENS, binding_sources
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.storage.config_file import load_config
from ovtui.wiring.workspace import Workspace


async def test_a_key_remapped_in_config_works_and_the_old_key_does_not(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    (workspace.root / "ovtui.toml").write_text(
        '[review]\npolicy = "ask"\n[keys]\n"review.approve" = "y"\n"app.review_screen" = "f2"\n',
        encoding="utf-8",
    )
    app = make_app(Workspace(workspace.root))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")  # no longer bound
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)
        await press_and_settle(pilot, "f2")
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("a")
        await pilot.pause()
        assert workspace.review.pending_plan(PLAN_ID).decisions[0].decision == "pending"
        await pilot.press("y")
        await pilot.pause()
        assert workspace.review.pending_plan(PLAN_ID).decisions[0].decision == "approved"


async def test_a_bad_keys_table_is_said_when_the_app_opens(workspace: Workspace, make_app: MakeApp) -> None:
    (workspace.root / "ovtui.toml").write_text(
        '[keys]\n"review.aprove" = "y"\n"review.approve" = "r"\n', encoding="utf-8"
    )
    app = make_app(Workspace(workspace.root))
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await settle(app, pilot)
        said = notifications(messages)
    assert any("'review.aprove' is not a binding id (did you mean 'review.approve'?)" in n for n in said)
    assert any("key 'r' has two actions in Review" in n for n in said)


async def test_every_binding_has_an_id_and_the_help_lists_all_of_them(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        sources = binding_sources(OvtuiApp)
        for _, node_class in sources:
            for binding in node_class.__dict__.get("BINDINGS", []):
                assert binding.id, f"{node_class.__name__} binding {binding.key} has no id"
        ids = {b.id for _, cls in sources for b in own_bindings(cls)}
        assert {"review.approve", "history.revert", "run.cancel", "list.down", "app.quit"} <= ids
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("a")  # opened on one screen it lists that screen's keys; a: every screen's
        table = app.screen.query_one("#help-table", VimTable)
        assert table.row_count == len(catalog(app, sources, app.keymap)) == len(ids)
        await pilot.press("j", "j", "j")  # the help is a list like the others: vim keys move in it
        assert table.cursor_row == 3
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_the_command_palette_offers_the_screen_actions(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        screen = app.screen
        provider = BindingCommands(screen)
        titles = [hit.text for hit in [h async for h in provider.discover()]]
        assert "Approve all (Review)" in titles and "History (App)" in titles
        hits = [h async for h in provider.search("approve all")]
        assert hits
        hits[0].command()
        await pilot.pause()
        await pilot.click("#confirm")  # the plan holds a delete
        await settle(app, pilot)
        assert workspace.review.pending_plan(PLAN_ID).undecided == 0


async def test_the_theme_is_remembered_in_config(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        app.theme = "nord"
        await pilot.pause()
    assert load_config(workspace.root).ui.theme == "nord"
    app = make_app(Workspace(workspace.root))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.theme == "nord"


async def test_each_registry_entry_is_a_mode_a_tab_a_key_and_a_help_section(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        app_ids = {b.id for b in own_bindings(OvtuiApp)}
        for entry in SCREENS:
            assert entry.binding_id in app_ids
            await press_and_settle(pilot, entry.hotkey)
            assert isinstance(app.screen, entry.screen) and app.current_mode == entry.key
            tabs = str(app.screen.query_one("#tabs").render())
            # A screen kept out of the tab bar (the bar's room at 80 columns) is reached by its key.
            assert (f"{entry.hotkey} {entry.title}" in tabs) == entry.in_tab_bar
        contexts = {info.context for info in catalog(app, binding_sources(OvtuiApp), app.keymap)}
        assert {entry.title for entry in SCREENS} <= contexts
