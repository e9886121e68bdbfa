"""SSH signatures as ``ssh-keygen -Y sign`` makes them (OpenSSH's PROTOCOL.sshsig), made and
verified with ``cryptography``.

A signature is an armored blob: "SSHSIG", version 1, the signer's public key, the namespace, a
reserved string, the hash algorithm and the signature; what is signed is "SSHSIG", the namespace,
the reserved string, the hash algorithm and the hash of the message. Ed25519, ECDSA (NIST P-256,
P-384, P-521) and RSA (rsa-sha2-512) keys are read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass
from typing import TypeAlias

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from ovtui.core.errors import OvtuiError

MAGIC = b"SSHSIG"
VERSION = 1
BEGIN, END = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"
_CURVES: dict[str, tuple[type[ec.EllipticCurve], hashes.HashAlgorithm]] = {
    "ecdsa-sha2-nistp256": (ec.SECP256R1, hashes.SHA256()),
    "ecdsa-sha2-nistp384": (ec.SECP384R1, hashes.SHA384()),
    "ecdsa-sha2-nistp521": (ec.SECP521R1, hashes.SHA512()),
}
PublicKeyTypes: TypeAlias = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKeyTypes: TypeAlias = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


class SignatureError(OvtuiError):
    """A signature that is malformed, for another namespace, or does not match what it signs."""


def string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class Reader:
    """Reads SSH wire fields (uint32, string) from a blob; a short blob raises SignatureError."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def uint32(self) -> int:
        if self.at + 4 > len(self.data):
            raise SignatureError("a truncated SSH signature")
        (value,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return int(value)

    def string(self) -> bytes:
        size = self.uint32()
        if self.at + size > len(self.data):
            raise SignatureError("a truncated SSH signature")
        value = self.data[self.at : self.at + size]
        self.at += size
        return value

    def done(self) -> bool:
        return self.at == len(self.data)


@dataclass(frozen=True)
class PublicKey:
    blob: bytes  # the key in SSH wire format

    @property
    def kind(self) -> str:
        return Reader(self.blob).string().decode("ascii", "replace")

    @property
    def fingerprint(self) -> str:
        """``SHA256:…`` as ``ssh-keygen -l`` prints it."""
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode("ascii")
        return "SHA256:" + digest.rstrip("=")

    def openssh(self) -> str:
        return f"{self.kind} {base64.b64encode(self.blob).decode('ascii')}"

    def key(self) -> PublicKeyTypes:
        try:
            loaded = serialization.load_ssh_public_key(self.openssh().encode("ascii"))
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise SignatureError(f"an SSH key ovtui cannot read ({self.kind}): {exc}") from None
        if not isinstance(loaded, ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
            raise SignatureError(f"an SSH key of a kind ovtui does not verify ({self.kind})")
        return loaded


def public_key_of(private: PrivateKeyTypes) -> PublicKey:
    line = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return PublicKey(base64.b64decode(line.split()[1]))


def parse_public_key(text: str) -> PublicKey:
    """``ssh-ed25519 AAAA… [comment]`` as a key (ValueError names what is wrong)."""
    parts = text.split()
    if len(parts) < 2:
        raise ValueError("not an SSH public key (expected: KEYTYPE BASE64 [COMMENT])")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except binascii.Error:
        raise ValueError("the key is not base64") from None
    key = PublicKey(blob)
    try:
        if key.kind != parts[0]:
            raise ValueError(f"the key says it is {key.kind}, not {parts[0]}")
        key.key()
    except SignatureError as exc:
        raise ValueError(str(exc)) from None
    return key


def _hash(name: str, message: bytes) -> bytes:
    if name == "sha512":
        return hashlib.sha512(message).digest()
    if name == "sha256":
        return hashlib.sha256(message).digest()
    raise SignatureError(f"an SSH signature with hash {name!r} (sha256 and sha512 are read)")


def signed_data(namespace: str, message: bytes, hash_name: str = "sha512") -> bytes:
    """What the key signs for ``message`` in ``namespace``."""
    return (
        MAGIC
        + string(namespace.encode())
        + string(b"")
        + string(hash_name.encode())
        + string(_hash(hash_name, message))
    )


def armor(public: PublicKey, namespace: str, signature: bytes, hash_name: str = "sha512") -> str:
    """The armored SSHSIG of a raw signature blob (``signature``: its SSH wire format)."""
    blob = (
        MAGIC
        + struct.pack(">I", VERSION)
        + string(public.blob)
        + string(namespace.encode())
        + string(b"")
        + string(hash_name.encode())
        + string(signature)
    )
    text = base64.b64encode(blob).decode("ascii")
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return "\n".join([BEGIN, *lines, END]) + "\n"


def sign_with(private: PrivateKeyTypes, namespace: str, message: bytes) -> str:
    """``message`` signed by a private key in ``namespace``, armored."""
    data = signed_data(namespace, message)
    public = public_key_of(private)
    if isinstance(private, ed25519.Ed25519PrivateKey):
        raw = string(b"ssh-ed25519") + string(private.sign(data))
    elif isinstance(private, ec.EllipticCurvePrivateKey):
        kind = public.kind
        r, s = decode_dss_signature(private.sign(data, ec.ECDSA(_CURVES[kind][1])))
        raw = string(kind.encode()) + string(string(_mpint(r)) + string(_mpint(s)))
    else:
        raw = string(b"rsa-sha2-512") + string(private.sign(data, padding.PKCS1v15(), hashes.SHA512()))
    return armor(public, namespace, raw)


def _mpint(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""


@dataclass(frozen=True)
class Signature:
    public: PublicKey
    namespace: str
    hash_name: str
    raw: bytes  # the signature in SSH wire format (its algorithm, then the bytes)


def parse(armored: str) -> Signature:
    """An armored SSHSIG (SignatureError when it is not one)."""
    text = armored.strip()
    if not (text.startswith(BEGIN) and text.endswith(END)):
        raise SignatureError("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    try:
        blob = base64.b64decode("".join(text[len(BEGIN) : -len(END)].split()), validate=True)
    except binascii.Error:
        raise SignatureError("an SSH signature that is not base64") from None
    if not blob.startswith(MAGIC):
        raise SignatureError("not an SSH signature (no SSHSIG magic)")
    reader = Reader(blob[len(MAGIC) :])
    if reader.uint32() != VERSION:
        raise SignatureError("an SSH signature of a version ovtui does not read")
    public, namespace = PublicKey(reader.string()), reader.string()
    reader.string()  # reserved
    hash_name, raw = reader.string(), reader.string()
    if not reader.done():
        raise SignatureError("an SSH signature with trailing bytes")
    return Signature(public, namespace.decode("utf-8", "replace"), hash_name.decode("ascii", "replace"), raw)


def verify(armored: str, namespace: str, message: bytes) -> PublicKey:
    """The key that signed ``message`` in ``namespace``; SignatureError when it did not."""
    signature = parse(armored)
    if signature.namespace != namespace:
        raise SignatureError(f"signed for namespace {signature.namespace!r}, not {namespace!r}")
    data = signed_data(namespace, message, signature.hash_name)
    reader = Reader(signature.raw)
    algorithm, raw = reader.string().decode("ascii", "replace"), reader.string()
    key = signature.public.key()
    try:
        if isinstance(key, ed25519.Ed25519PublicKey) and algorithm == "ssh-ed25519":
            key.verify(raw, data)
        elif isinstance(key, ec.EllipticCurvePublicKey) and algorithm == signature.public.kind:
            parts = Reader(raw)
            r, s = int.from_bytes(parts.string(), "big"), int.from_bytes(parts.string(), "big")
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(_CURVES[algorithm][1]))
        elif isinstance(key, rsa.RSAPublicKey) and algorithm in ("rsa-sha2-512", "rsa-sha2-256"):
            digest: hashes.HashAlgorithm = hashes.SHA512() if algorithm == "rsa-sha2-512" else hashes.SHA256()
            key.verify(raw, data, padding.PKCS1v15(), digest)
        else:
            raise SignatureError(f"a {algorithm} signature by a {signature.public.kind} key")
    except InvalidSignature:
        raise SignatureError("the signature does not match what it is said to sign") from None
    return signature.public
