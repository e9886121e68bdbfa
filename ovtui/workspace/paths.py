"""Where things live in a workspace, and the rules that keep every path inside it.

URIs are OpenViking's: ``viking://user/<user>/memories/experiences/x.md`` maps to
``<root>/memories/experiences/x.md``. Names that come from outside (an LLM, a rollout file, a
memory file) are validated before they become paths: no separators, no ``..``, no control
characters, not a reserved device name, bounded length.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ovtui.errors import UnsafePathError

URI_SCHEME = "viking://"
MAX_NAME_LENGTH = 128
# Memory files larger than this are refused on read: a policy file is prose, not a data dump.
MAX_MEMORY_FILE_BYTES = 4 * 1024 * 1024

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")
_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}
HIDDEN_MEMORY_NAMES = {".overview.md", ".abstract.md"}


def validate_name(name: str, *, what: str = "name") -> str:
    """Return ``name`` if it is safe as one path component (without extension), else raise."""
    if (
        isinstance(name, str)
        and len(name) <= MAX_NAME_LENGTH
        and _NAME.match(name)
        and ".." not in name
        and name.split(".")[0].lower() not in _WINDOWS_RESERVED
    ):
        return name  # the common case, checked in one pass; the checks below explain a refusal
    if not isinstance(name, str) or not name:
        raise UnsafePathError(f"{what} is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafePathError(f"{what} {name[:40]!r}… is longer than {MAX_NAME_LENGTH} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UnsafePathError(f"{what} {name!r} contains a control character")
    if "/" in name or "\\" in name or name.startswith("."):
        raise UnsafePathError(f"{what} {name!r} contains a path separator or starts with a dot")
    if ".." in name:
        raise UnsafePathError(f"{what} {name!r} contains '..'")
    if not _NAME.match(name):
        raise UnsafePathError(f"{what} {name!r} may only use letters, digits, '_', '-' and '.'")
    if name.split(".")[0].lower() in _WINDOWS_RESERVED:
        raise UnsafePathError(f"{what} {name!r} is a reserved device name")
    return name


def slugify(text: str, *, fallback: str = "item") -> str:
    """A safe name derived from free text (for names an LLM or a case proposes)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", text.strip().lower()).strip("_")[:MAX_NAME_LENGTH] or fallback
    if slug.split(".")[0] in _WINDOWS_RESERVED:
        slug = f"{slug}_"
    return slug


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
    """The layout of one workspace folder (DESIGN §3)."""

    root: Path
    user: str = "default"

    def __post_init__(self) -> None:
        if not _USER.match(self.user):
            raise UnsafePathError(f"workspace user {self.user!r} is not a valid user name")
        object.__setattr__(self, "root", Path(os.path.realpath(self.root)))

    # --- folders ---
    @property
    def memories(self) -> Path:
        return self.root / "memories"

    @property
    def state(self) -> Path:
        return self.root / ".ovtui"

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
        return self.root / "ovtui.toml"

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

    def relative(self, path: Path) -> str:
        """A workspace-relative display form (never show tmp or home paths in the UI)."""
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
