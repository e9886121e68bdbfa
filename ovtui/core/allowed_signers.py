"""``[review] signers``: who may sign a review decision with which key, in the format of OpenSSH's
allowed-signers file (``ssh-keygen -Y verify -f``, git's ``gpg.ssh.allowedSignersFile``).

One signer a line: ``PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]``; principals are
comma-separated names (``*`` and ``?`` patterns as OpenSSH matches them), compared as reviewer names
(``ovtui.core.reviewers.reviewer_name``); the options read are ``namespaces="…"``, ``valid-after``
and ``valid-before``. A ``cert-authority`` line (certificates) is refused, as is an option ovtui
does not know: a signer ovtui reads differently from OpenSSH would be worse than none.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ovtui.core.errors import OvtuiError
from ovtui.core.reviewers import reviewer_name
from ovtui.core.sshsig import PublicKey, SignatureError, parse_public_key, verify

MAX_SIGNERS_BYTES = 1 << 20


@dataclass(frozen=True)
class Signer:
    principals: tuple[str, ...]  # normalised patterns
    key: PublicKey
    namespaces: tuple[str, ...] | None = None  # None: any
    valid_after: datetime | None = None
    valid_before: datetime | None = None

    def allows(self, reviewer: str, namespace: str, at: datetime | None) -> bool:
        if not any(fnmatch.fnmatchcase(reviewer, p) for p in self.principals):
            return False
        if self.namespaces is not None and not any(
            fnmatch.fnmatchcase(namespace, n) for n in self.namespaces
        ):
            return False
        if at is not None and self.valid_after is not None and at < self.valid_after:
            return False
        return not (at is not None and self.valid_before is not None and at >= self.valid_before)


def _fields(line: str) -> list[str]:
    """White-space separated fields, a double-quoted part kept whole (``namespaces="a b"``)."""
    fields, current, quoted = [], "", False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch.isspace() and not quoted:
            if current:
                fields.append(current)
            current = ""
            continue
        current += ch
    if quoted:
        raise ValueError("an unclosed quote")
    return [*fields, current] if current else fields


def _time(text: str) -> datetime:
    """OpenSSH's YYYYMMDD[HHMM[SS]][Z]; without Z, UTC here too (a server's time zone is no rule)."""
    digits = text.removesuffix("Z").removesuffix("z")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if len(digits) not in formats or not digits.isdigit():
        raise ValueError(f"{text!r} is not a time like 20260131 or 202601311200Z")
    return datetime.strptime(digits, formats[len(digits)]).replace(tzinfo=UTC)


def _options(text: str) -> dict[str, str]:
    """``a="x,y",b`` → {"a": "x,y", "b": ""}: options split at commas outside quotes."""
    options: dict[str, str] = {}
    parts, current, quoted = [], "", False
    for ch in text + ",":
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append(current)
            current = ""
            continue
        current += ch
    for option in (o for o in parts if o):
        name, _, value = option.partition("=")
        options[name.lower()] = value.strip('"')
    return options


def parse_line(line: str) -> Signer:
    fields = _fields(line)
    if len(fields) < 3:
        raise ValueError("expected PRINCIPALS [OPTIONS] KEYTYPE BASE64")
    principals = tuple(reviewer_name(p) for p in fields[0].split(",") if p.strip())
    has_options = not fields[1].startswith(("ssh-", "ecdsa-", "sk-"))
    options = _options(fields[1]) if has_options else {}
    if "cert-authority" in options:
        raise ValueError("cert-authority (certificate) signers are not read by ovtui: list each key")
    unknown = sorted(set(options) - {"namespaces", "valid-after", "valid-before"})
    if unknown:
        raise ValueError(
            f"option {unknown[0]!r} is not one ovtui reads (namespaces, valid-after, valid-before)"
        )
    rest = fields[2:] if has_options else fields[1:]
    key = parse_public_key(" ".join(rest[:2]))
    namespaces = options.get("namespaces")
    return Signer(
        principals=principals,
        key=key,
        namespaces=tuple(n.strip() for n in namespaces.split(",")) if namespaces is not None else None,
        valid_after=_time(options["valid-after"]) if "valid-after" in options else None,
        valid_before=_time(options["valid-before"]) if "valid-before" in options else None,
    )


@dataclass(frozen=True)
class AllowedSigners:
    path: Path
    shown: str  # the file as messages name it
    signers: tuple[Signer, ...]

    def keys_of(self, reviewer: str, namespace: str) -> list[PublicKey]:
        return [s.key for s in self.signers if s.allows(reviewer, namespace, None)]

    def verify(self, reviewer: str, armored: str | None, namespace: str, message: bytes, at: str) -> str:
        """The fingerprint of the key that signed ``message`` for ``reviewer``; SignatureError,
        saying why in one line, when it is unsigned, badly signed, or signed by a key the file does
        not list for that reviewer."""
        if not armored:
            raise SignatureError(f"it is not signed, and {self.shown} asks for a signature on every approval")
        key = verify(armored, namespace, message)
        try:
            when = datetime.fromisoformat(at) if at else None
        except ValueError:
            raise SignatureError(f"its time {at!r} is not an ISO time") from None
        if not any(s.key == key and s.allows(reviewer, namespace, when) for s in self.signers):
            raise SignatureError(f"key {key.fingerprint} is not one {self.shown} lists for {reviewer}")
        return key.fingerprint


def load_signers(path: Path, shown: str) -> AllowedSigners:
    """The signers file (OvtuiError naming the file and line when it cannot be read)."""
    try:
        if path.stat().st_size > MAX_SIGNERS_BYTES:
            raise OvtuiError(f"{shown}: over {MAX_SIGNERS_BYTES} bytes: not an allowed-signers file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OvtuiError(
            f"[review] signers: {shown}: cannot be read ({exc.__class__.__name__}: {exc})"
        ) from None
    signers = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            signers.append(parse_line(line))
        except (ValueError, OvtuiError) as exc:
            raise OvtuiError(f"{shown}:{number}: {exc}") from None
    if not signers:
        raise OvtuiError(f"{shown}: lists no signer (one `NAME KEYTYPE BASE64` a line)")
    return AllowedSigners(path, shown, tuple(signers))
