"""AnswerChecker with peers: an item's ``peer_id`` names a file in that peer's space, checked like the
user's own (read before edit, SEARCH/REPLACE on the peer's text); a peer the checker was not given,
and a delete in such a peer's space, are problems."""

from __future__ import annotations

from ovtui.core.fileformat import MemoryFile
from ovtui.llm.extract_check import PEER_FIELD, AnswerChecker
from ovtui.memory.merge_ops import SearchReplace, render_blocks
from ovtui.memory.store import MemoryStore

PREFS = "preferences"


def checker(store: MemoryStore) -> AnswerChecker:
    schemas = {PREFS: store.registry.get(PREFS)}
    return AnswerChecker(store, schemas, {PEER_FIELD}, peers=("bob",))


def write(store: MemoryStore, peer: str, topic: str, text: str) -> MemoryFile:
    path = store.type_dir(PREFS, peer) / f"{topic}.md"
    store.write_new(path, MemoryFile(content=text, fields={"topic": topic}))
    return store.read(path)


def test_a_peer_item_is_checked_on_the_peers_file(store: MemoryStore) -> None:
    bobs = write(store, "bob", "trains", "- Bob prefers trains.")
    assert bobs.uri == store.uri_for_name(PREFS, "trains", peer_id="bob")
    patch = render_blocks([SearchReplace("- Bob prefers trains.", "- Bob prefers night trains.")])
    item = {"topic": "trains", "content": patch, PEER_FIELD: "bob"}
    unseen = checker(store).check({PREFS: [item]}, {})
    assert list(unseen.unread) == [bobs.uri] and unseen.problems == []  # shown first, as the user's own
    [op] = checker(store).check({PREFS: [item]}, {str(bobs.uri): bobs}).operations[PREFS]
    assert (op.uri, op.before, op.content) == (bobs.uri, bobs, "- Bob prefers night trains.")
    assert op.extras == {PEER_FIELD: "bob"}


def test_a_peer_not_given_is_a_problem_and_its_files_are_not_touched(store: MemoryStore) -> None:
    eves = write(store, "eve", "opera", "- Eve loves opera.")
    checked = checker(store).check(
        {
            PREFS: [{"topic": "opera", "content": "- Likes opera.", PEER_FIELD: "eve"}],
            "deletes": [{"uri": eves.uri}],
        },
        {},
    )
    assert checked.operations[PREFS] == [] and checked.unread == {} and checked.deletes == []
    assert checked.problems == [
        "preferences[0].peer_id: 'eve' is not a peer of this conversation; the peers are bob "
        "(leave peer_id out for the user's own memories)",
        f"deletes[0].uri: {eves.uri} is not in the user's memories or those of a peer in this conversation",
    ]
