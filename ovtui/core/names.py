"""The one name rule: when a name from outside (an LLM, a rollout file, a memory file, a peer id,
a request) may become a path component, and names derived from free text that always may.

Safe in any script (OpenViking writes ``取消预订.md`` and ``meal request change.md``): no
separators or characters Windows forbids, no ``..``, no control or direction-changing characters,
no leading dot or surrounding spaces, not a reserved device name, bounded length.
"""

from __future__ import annotations

import re
import unicodedata

from ovtui.core.errors import UnsafePathError

MAX_NAME_LENGTH = 128
# File names are limited to 255 bytes on common file systems; a stem leaves room for ".md" and more.
MAX_NAME_BYTES = 200
# Names ovtui derives leave room for what is appended to them (``_<YYYYMMDDHHMMSS>_<16 hex>``), so a
# derived file name still passes the reader's validation.
DERIVED_NAME_ROOM = 32

# The common case (ASCII words), checked in one pass; anything else gets the full rules below.
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")
# Characters no portable file name may hold (Windows forbids them; ':' is a stream separator there).
_FORBIDDEN = set('/\\<>:"|?*')
# Characters that make a name display as something else (bidirectional overrides, zero widths).
_DECEPTIVE = {
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200B, 0x200E, 0x200F, 0xFEFF)
}
_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}


def _is_reserved(name: str) -> bool:
    return name.split(".")[0].strip().lower() in _WINDOWS_RESERVED


def validate_name(name: str, *, what: str = "name") -> str:
    """Return ``name`` if it is safe as one path component (without extension), else raise.

    Safe as a path, in any script (OpenViking writes ``取消预订.md`` and ``meal request change.md``):
    no separators or characters Windows forbids, no ``..``, no control or direction-changing
    characters, no leading dot or surrounding spaces, not a reserved device name, bounded length.
    """
    if (
        isinstance(name, str)
        and len(name) <= MAX_NAME_LENGTH
        and _PLAIN_NAME.match(name)
        and not _is_reserved(name)
    ):
        return name
    if not isinstance(name, str) or not name:
        raise UnsafePathError(f"{what} is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafePathError(f"{what} {name[:40]!r}… is longer than {MAX_NAME_LENGTH} characters")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise UnsafePathError(f"{what} {name[:40]!r}… is longer than {MAX_NAME_BYTES} bytes (UTF-8)")
    if any(unicodedata.category(c) in ("Cc", "Cs") or c in _DECEPTIVE for c in name):
        raise UnsafePathError(f"{what} {name!r} contains a control character")
    if "/" in name or "\\" in name:
        raise UnsafePathError(f"{what} {name!r} contains a path separator")
    if forbidden := sorted({c for c in name if c in _FORBIDDEN}):
        shown = " ".join(forbidden)
        raise UnsafePathError(f"{what} {name!r} contains {shown}, which file names may not hold (Windows)")
    if name.startswith("."):
        raise UnsafePathError(f"{what} {name!r} starts with a dot")
    if ".." in name:
        raise UnsafePathError(f"{what} {name!r} contains '..'")
    if name != name.strip() or name.endswith("."):
        raise UnsafePathError(f"{what} {name!r} starts or ends with a space or ends with a dot")
    if _is_reserved(name):
        raise UnsafePathError(f"{what} {name!r} is a reserved device name")
    return name


# A workspace user: the <user> of every URI and the folder of the user's space (one folder level,
# so stricter than a name: ASCII letters, digits, ``_`` and ``-``, at most 64).
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")


def validate_user(name: str, *, what: str = "user") -> str:
    """Return ``name`` if it is a valid user name (``USER_NAME``, not a reserved device name)."""
    if isinstance(name, str) and USER_NAME.match(name) and not _is_reserved(name):
        return name
    shown = repr(name[:70]) if isinstance(name, str) else type(name).__name__
    raise UnsafePathError(
        f"{what} {shown} is not a valid user name (1-64 ASCII letters, digits, '_' or '-', "
        "starting with a letter or digit)"
    )


def file_stem(name: str, *, what: str = "name") -> str:
    """The file name stem of a memory called ``name``, derived as OpenViking does: lower-cased
    (``Seat_Change_Request`` lives in ``seat_change_request.md``). Validated: it becomes a path."""
    return validate_name(validate_name(name, what=what).lower(), what=what)


def same_name(field_value: str, stem: str) -> bool:
    """Whether a memory's name field names the file ``stem`` (OpenViking lower-cases file names)."""
    return field_value.lower() == stem.lower()


def slugify(
    text: str, *, fallback: str = "item", max_length: int = MAX_NAME_LENGTH - DERIVED_NAME_ROOM
) -> str:
    """A safe name derived from free text (for names an LLM or a case proposes): lower-case words
    of any script joined by ``_``, short enough that a suffix still fits the reader's limits."""
    words = re.sub(r"[\W_]+", "_", unicodedata.normalize("NFC", text).strip().lower()).strip("_")
    slug = words[:max_length].rstrip("_")
    byte_limit = max_length * MAX_NAME_BYTES // MAX_NAME_LENGTH
    while len(slug.encode("utf-8")) > byte_limit:
        slug = slug[:-1].rstrip("_")
    slug = slug or fallback
    if _is_reserved(slug):
        slug = f"{slug}_"
    return validate_name(slug, what="derived name")
