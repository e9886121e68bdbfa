"""Where things live in a workspace, and the rules that keep every path inside it.

URIs are OpenViking's: ``viking://user/<user>/memories/experiences/x.md`` maps to
``<root>/memories/experiences/x.md``. Memories about a peer (someone else in the user's
conversations) live in that peer's own space, ``peers/<peer_id>/``, which holds the
same type folders (``peers/alice/memories/profile.md``). Names that come from outside (an LLM, a
rollout file, a memory file, a peer id) are validated before they become paths: no separators, no
``..``, no control characters, not a reserved device name, bounded length.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ovtui.core.bounds import MAX_MEMORY_FILE_BYTES
from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_name, validate_user

__all__ = ["MAX_MEMORY_FILE_BYTES"]  # the read limit, re-exported where paths are named

URI_SCHEME = "viking://"

# Everything ovtui itself writes outside the memory folders, relative to the root (one list: the
# opening check and the symlink tests use it). Folders first; a file's folder is listed before it.
STATE_DIR = ".ovtui"
PENDING_FOLDER = f"{STATE_DIR}/pending"  # plans waiting for review
SETTLED_FOLDER = f"{PENDING_FOLDER}/settled"  # applied, discarded and re-planned ones, as decided
BOOKKEEPING_FOLDERS = (
    STATE_DIR,
    f"{STATE_DIR}/journal",
    PENDING_FOLDER,
    SETTLED_FOLDER,
    f"{STATE_DIR}/intake",
    f"{STATE_DIR}/llm_cache",
    "history",
    "runs",
    "inbox",
    "inbox/rollouts",
    "inbox/done",
    "inbox/rejected",
    "inbox/sessions",
    "sessions",
    "users",
)
LOCK_FILE = f"{STATE_DIR}/lock"
LOCK_HOLDER_FILE = f"{STATE_DIR}/lock.holder"
HISTORY_INDEX_FILE = "history/index.jsonl"
INDEX_FILE = HISTORY_INDEX_FILE.rpartition("/")[2]
# The head of the history's hash chain: the position and digest of the newest record.
HISTORY_CHAIN_FILE = "history/chain.json"
# The audit record of one applied plan, commit or revert (its folder is under history/ or an archive).
RECORD_FILE = "memory_diff.json"
CONFIG_FILE = "ovtui.toml"
LEDGER_LOG_FILE = f"{STATE_DIR}/ledger.jsonl"  # one line per use of a memory or outcome of a consumer
LEDGER_SUMMARY_FILE = f"{STATE_DIR}/ledger.json"  # the records folded out of the log
LEDGER_LOCK_FILE = f"{STATE_DIR}/ledger.lock"  # taken for one append or one compaction
# Whether the experiences used were followed (``train.adherence.store``), beside the ledger.
ADHERENCE_FILE = f"{STATE_DIR}/adherence.json"
ADHERENCE_LOCK_FILE = f"{STATE_DIR}/adherence.lock"
# What an older ovtui kept (uses only), until the use ledger takes it in and removes it.
LEGACY_HOTNESS_LOG_FILE = f"{STATE_DIR}/hotness.jsonl"
LEGACY_HOTNESS_SUMMARY_FILE = f"{STATE_DIR}/hotness.json"
LEGACY_HOTNESS_LOCK_FILE = f"{STATE_DIR}/hotness.lock"
# How many runs have scored each sealed split ([evaluation] sealed), by "<dataset>/<split>".
SEALED_SCORES_FILE = f"{STATE_DIR}/sealed.json"
# What each LLM endpoint (base URL + model) was found to support, so a refused feature is asked once.
ENDPOINTS_FILE = f"{STATE_DIR}/endpoints.json"
# The experiences as last parsed, by file signature: a copy that spares a new process the full parse.
EXPERIENCE_CACHE_FILE = f"{STATE_DIR}/experiences.cache.jsonl"
BOOKKEEPING_FILES = (
    LOCK_FILE,
    LOCK_HOLDER_FILE,
    HISTORY_INDEX_FILE,
    HISTORY_CHAIN_FILE,
    CONFIG_FILE,
    LEDGER_LOG_FILE,
    LEDGER_SUMMARY_FILE,
    LEDGER_LOCK_FILE,
    ADHERENCE_FILE,
    ADHERENCE_LOCK_FILE,
    LEGACY_HOTNESS_LOG_FILE,
    LEGACY_HOTNESS_SUMMARY_FILE,
    LEGACY_HOTNESS_LOCK_FILE,
    SEALED_SCORES_FILE,
    ENDPOINTS_FILE,
    EXPERIENCE_CACHE_FILE,
)

HIDDEN_MEMORY_NAMES = {".overview.md", ".abstract.md"}
# The folder of the other users' spaces (``[workspace] users``): ``users/<user>/`` is a workspace
# folder of its own, that user's memories, sessions and history.
USERS_DIR = "users"


def user_space(root: Path, user: str) -> Path:
    """The folder of ``user``'s own space in the workspace at ``root`` (the name validated)."""
    return Path(root) / USERS_DIR / validate_user(user)


# The folder of the peers' spaces: ``peers/<peer_id>/`` mirrors the type folders of the root.
PEERS_DIR = "peers"


def peer_space(peer_id: str | None) -> str:
    """The relative prefix of a peer's space (``peers/alice/``), "" for the user's own; the peer id
    is validated (it becomes a folder)."""
    if peer_id is None:
        return ""
    return f"{PEERS_DIR}/{validate_name(peer_id, what='peer_id')}/"


def split_peer(rel: str) -> tuple[str | None, str]:
    """The peer whose space holds the workspace-relative path ``rel`` and the path inside that space:
    ``peers/alice/memories/profile.md`` → ``("alice", "memories/profile.md")``; a path outside
    ``peers/`` is the user's own (``None``). Raises UnsafePathError for a peer folder whose name
    breaks the name rule."""
    if not rel.startswith(PEERS_DIR + "/"):
        return None, rel
    peer, _, inner = rel[len(PEERS_DIR) + 1 :].partition("/")
    return validate_name(peer, what="peer_id"), inner


# Folders whose real path was checked, by (device, inode, mode): a folder swapped for a link gets
# a new identity and is checked again. Saves a full path resolution per write on the apply path.
_checked_folders: dict[str, tuple[int, int, int]] = {}


def _link_error(root: str, rel: str, lexical: str) -> UnsafePathError:
    real = os.path.realpath(lexical)
    if real.startswith(root + os.sep):
        return UnsafePathError(f"{rel} is or passes through a symbolic link")
    return UnsafePathError(f"{rel} leads outside the workspace (symbolic link)")


def _check_folder(root: str, folder: str, rel: str) -> None:
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if folder.startswith(root + os.sep):  # to be created below a checked folder
            _check_folder(root, os.path.dirname(folder), rel)
        return
    identity = (info.st_dev, info.st_ino, info.st_mode)
    if _checked_folders.get(folder) == identity:
        return
    if os.path.realpath(folder) != folder:
        raise _link_error(root, rel, folder)
    _checked_folders[folder] = identity


def linkless_path(root: str, rel: str) -> str:
    """``root/rel`` (``rel``: a checked relative POSIX path) when neither it nor a folder on the way
    is a symbolic link, so a write there cannot leave the workspace or land on another file."""
    lexical = os.path.join(root, *rel.split("/"))
    _check_folder(root, os.path.dirname(lexical), rel)
    try:
        if stat.S_ISLNK(os.lstat(lexical).st_mode):
            raise _link_error(root, rel, lexical)
    except FileNotFoundError:
        pass
    return lexical


@dataclass(frozen=True)
class WorkspacePaths:
    """The layout of one workspace folder: where each kind of file lives, and its URIs."""

    root: Path
    user: str = "default"

    def __post_init__(self) -> None:
        validate_user(self.user, what="workspace user")
        object.__setattr__(self, "root", Path(os.path.realpath(self.root)))

    # --- folders ---
    @property
    def memories(self) -> Path:
        return self.root / "memories"

    @property
    def peers(self) -> Path:
        return self.root / PEERS_DIR

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def history(self) -> Path:
        return self.root / "history"

    @property
    def datasets(self) -> Path:
        return self.root / "datasets"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def quarantine(self) -> Path:
        return self.inbox / "rejected"

    @property
    def config_file(self) -> Path:
        return self.root / CONFIG_FILE

    # --- URIs ---
    @property
    def uri_prefix(self) -> str:
        return f"{URI_SCHEME}user/{self.user}/"

    def uri_for(self, path: Path) -> str:
        rel = self.inside(path).relative_to(self.root)
        return self.uri_prefix + rel.as_posix()

    def relative_of(self, uri: str) -> str:
        """The workspace-relative path a URI names, checked lexically (no file system access)."""
        if not uri.startswith(self.uri_prefix):
            raise UnsafePathError(f"URI {uri!r} is not under {self.uri_prefix!r}")
        rel = uri[len(self.uri_prefix) :]
        parts = rel.split("/")
        if (
            not rel
            or any(p in ("", ".", "..") for p in parts)
            or any("\x00" in p or "\\" in p for p in parts)
        ):
            raise UnsafePathError(f"URI {uri!r} has an empty, '.', '..' or invalid segment")
        return rel

    def memory_rel(self, uri: str) -> str:
        """The write rule for a memory file a URI names: lexically checked, inside ``memories/`` of
        the user's own space or a peer's (``peers/<peer_id>/memories/``), never ovtui's own files
        (``ovtui.toml``, ``.ovtui/``, ``history/``, ``runs/``, …). Raises UnsafePathError naming why.
        The caller still checks the declared type (the registry) and links (``linkless_path``)."""
        rel = self.relative_of(uri)
        _peer, inner = split_peer(rel)
        if not inner.startswith("memories/"):
            raise UnsafePathError(f"{rel} is not a memory file (only files under memories/ are)")
        return rel

    def path_for(self, uri: str) -> Path:
        """The file a URI names; raises UnsafePathError for a foreign user or an escaping path."""
        return self.inside(self.root.joinpath(*self.relative_of(uri).split("/")))

    def inside(self, path: Path) -> Path:
        """Resolve ``path`` (following links) and require it to lie within the workspace root."""
        path = Path(path)
        resolved = Path(os.path.realpath(path if path.is_absolute() else self.root / path))
        if resolved != self.root and self.root not in resolved.parents:
            raise UnsafePathError(f"path {str(path)!r} lies outside the workspace {str(self.root)!r}")
        return resolved

    def display_uri(self, uri: str | None) -> str:
        """A URI as a workspace-relative path (never a tmp or home path on screen)."""
        if not uri:
            return ""
        return uri[len(self.uri_prefix) :] if uri.startswith(self.uri_prefix) else uri

    def relative(self, path: Path | str) -> str:
        """A workspace-relative display form (never show tmp or home paths in the UI)."""
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
