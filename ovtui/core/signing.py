"""Signing a review decision with the reviewer's SSH key: a key file (``--key PATH``, ``[review]
key``) read in this process, or a key held by ssh-agent (``SSH_AUTH_SOCK``), asked over the agent
protocol (draft-miller-ssh-agent: list the identities, sign a request). ovtui never writes a
private key: it reads an unencrypted key file, and a passphrase-protected key signs through the
agent (``ssh-add KEY``; ``--key KEY.pub`` or ``--key KEY`` names which of its keys).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from ovtui.core.errors import OvtuiError
from ovtui.core.sshsig import (
    PrivateKeyTypes,
    PublicKey,
    Reader,
    armor,
    parse_public_key,
    public_key_of,
    sign_with,
    signed_data,
)
from ovtui.core.sshsig import string as wire_string

_REQUEST_IDENTITIES, _IDENTITIES_ANSWER = 11, 12
_SIGN_REQUEST, _SIGN_RESPONSE = 13, 14
_RSA_SHA2_512 = 4
_AGENT_TIMEOUT_S = 30.0  # a confirm-before-use key waits for the person
MAX_KEY_BYTES = 64 * 1024


class SigningError(OvtuiError):
    """No key to sign with, or the key or agent could not sign (the message says which)."""


class Signer(Protocol):
    @property
    def public(self) -> PublicKey: ...

    def sign(self, namespace: str, message: bytes) -> str:
        """``message`` signed in ``namespace``, as an armored SSHSIG."""
        ...


@dataclass(frozen=True)
class KeySigner:
    private: PrivateKeyTypes
    public: PublicKey

    def sign(self, namespace: str, message: bytes) -> str:
        return sign_with(self.private, namespace, message)


class Agent:
    """A connection's worth of ssh-agent requests over its UNIX socket."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path

    def _request(self, kind: int, payload: bytes) -> tuple[int, Reader]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(_AGENT_TIMEOUT_S)
                conn.connect(self.socket_path)
                conn.sendall(struct.pack(">IB", len(payload) + 1, kind) + payload)
                (size,) = struct.unpack(">I", _read(conn, 4))
                answer = _read(conn, size)
        except OSError as exc:
            raise SigningError(f"ssh-agent at {self.socket_path}: {exc.strerror or exc}") from None
        return answer[0], Reader(answer[1:])

    def identities(self) -> list[tuple[PublicKey, str]]:
        kind, reader = self._request(_REQUEST_IDENTITIES, b"")
        if kind != _IDENTITIES_ANSWER:
            raise SigningError("ssh-agent did not list its keys")
        found = []
        for _ in range(reader.uint32()):
            blob, comment = reader.string(), reader.string()
            found.append((PublicKey(blob), comment.decode("utf-8", "replace")))
        return found

    def sign_data(self, public: PublicKey, data: bytes) -> bytes:
        flags = _RSA_SHA2_512 if public.kind == "ssh-rsa" else 0
        payload = wire_string(public.blob) + wire_string(data) + struct.pack(">I", flags)
        kind, reader = self._request(_SIGN_REQUEST, payload)
        if kind != _SIGN_RESPONSE:
            raise SigningError(f"ssh-agent refused to sign with key {public.fingerprint}")
        return reader.string()


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("ssh-agent closed the connection")
        data += chunk
    return data


@dataclass(frozen=True)
class AgentSigner:
    agent: Agent
    public: PublicKey

    def sign(self, namespace: str, message: bytes) -> str:
        return armor(
            self.public, namespace, self.agent.sign_data(self.public, signed_data(namespace, message))
        )


def _key_file(path: Path) -> tuple[PrivateKeyTypes | None, PublicKey | None]:
    """The private key in ``path`` (None when it is passphrase-protected) and its public key when
    known (from the key, or from ``PATH.pub``, or ``path`` itself when it is a public key)."""
    try:
        if path.stat().st_size > MAX_KEY_BYTES:
            raise SigningError(f"{path}: over {MAX_KEY_BYTES} bytes: not an SSH key")
        data = path.read_bytes()
    except OSError as exc:
        raise SigningError(f"signing key {path}: cannot be read ({exc.strerror or exc})") from None
    if not data.lstrip().startswith(b"-----BEGIN"):
        try:
            return None, parse_public_key(data.decode("ascii", "replace"))
        except ValueError as exc:
            raise SigningError(f"signing key {path}: {exc}") from None
    try:
        private = serialization.load_ssh_private_key(data, password=None)
    except TypeError:  # "Password was not given but private key is encrypted"
        pub = path.with_name(path.name + ".pub")
        public = _key_file(pub)[1] if pub.is_file() else None
        return None, public
    except ValueError as exc:
        raise SigningError(f"signing key {path}: not an OpenSSH private key ({exc})") from None
    if not isinstance(private, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise SigningError(f"signing key {path}: a kind of key ovtui does not sign with")
    return private, public_key_of(private)


def find_signer(key_path: Path | None, agent_socket: str | None, wanted: Sequence[PublicKey]) -> Signer:
    """The signer for a decision: the key file named, else the agent's key that ``wanted`` lists
    (the keys the signers file allows the reviewer), else the agent's only key."""
    agent = Agent(agent_socket) if agent_socket else None
    if key_path is not None:
        private, public = _key_file(key_path)
        if private is not None and public is not None:
            return KeySigner(private, public)
        if agent is None or public is None:
            raise SigningError(
                f"signing key {key_path} is passphrase-protected: add it to ssh-agent (ssh-add {key_path}) "
                "and keep SSH_AUTH_SOCK set; ovtui asks the agent to sign"
            )
        if public not in [k for k, _ in agent.identities()]:
            raise SigningError(f"ssh-agent does not hold key {key_path} ({public.fingerprint}): ssh-add it")
        return AgentSigner(agent, public)
    if agent is None:
        raise SigningError(
            "no key to sign the approval with: give --key PATH, set [review] key, "
            "or run ssh-agent (SSH_AUTH_SOCK)"
        )
    held = [k for k, _ in agent.identities()]
    listed = [k for k in held if k in wanted]
    if listed:
        return AgentSigner(agent, listed[0])
    if len(held) == 1 and not wanted:
        return AgentSigner(agent, held[0])
    raise SigningError(
        f"ssh-agent holds {len(held)} key(s), none of them the reviewer's in [review] signers: "
        "give --key PATH or ssh-add the reviewer's key"
    )
