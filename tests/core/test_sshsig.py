"""ovtui's SSH signatures are OpenSSH's: one made by ``ssh-keygen -Y sign`` verifies in ovtui, one
made by ovtui (from a key file or through a real ssh-agent) verifies with ``ssh-keygen -Y verify``,
and a signature over other bytes or another namespace does not verify."""

from __future__ import annotations

from pathlib import Path

import pytest
from signing_support import keypair, public_line, ssh_add, ssh_agent, ssh_keygen_sign, ssh_keygen_verify

from ovtui.core.allowed_signers import load_signers
from ovtui.core.errors import OvtuiError
from ovtui.core.signing import SigningError, find_signer
from ovtui.core.sshsig import SignatureError, parse_public_key, verify

SPACE = "ovtui-review"
MESSAGE = b"plan: p1\nitem: 0\n"


def test_openssh_signatures_verify_in_ovtui_and_ovtuis_in_openssh(tmp_path: Path) -> None:
    key = keypair(tmp_path, "ana")
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"ana {public_line(key)}\n")

    by_openssh = ssh_keygen_sign(key, SPACE, MESSAGE)
    assert verify(by_openssh, SPACE, MESSAGE) == parse_public_key(public_line(key))
    with pytest.raises(SignatureError, match="does not match"):
        verify(by_openssh, SPACE, MESSAGE + b"x")
    with pytest.raises(SignatureError, match="namespace"):
        verify(by_openssh, "git", MESSAGE)

    by_ovtui = find_signer(key, None, []).sign(SPACE, MESSAGE)
    assert 'Good "ovtui-review" signature for ana' in ssh_keygen_verify(
        signers, "ana", SPACE, by_ovtui, MESSAGE
    )
    fingerprint = load_signers(signers, "allowed_signers").verify("ana", by_ovtui, SPACE, MESSAGE, "")
    assert fingerprint == parse_public_key(public_line(key)).fingerprint


def test_a_passphrase_key_signs_through_a_real_agent(tmp_path: Path) -> None:
    key = keypair(tmp_path, "bob", passphrase="correct horse")
    other = keypair(tmp_path, "eve")
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"bob {public_line(key)}\n")
    with pytest.raises(SigningError, match="passphrase-protected: add it to ssh-agent"):
        find_signer(key, None, [])
    with ssh_agent(tmp_path / "agent") as sock:
        ssh_add(sock, key, "correct horse")
        ssh_add(sock, other)
        wanted = load_signers(signers, "allowed_signers").keys_of("bob", SPACE)
        signed = find_signer(None, sock, wanted).sign(SPACE, MESSAGE)  # the agent's key for bob
        assert "signature for bob" in ssh_keygen_verify(signers, "bob", SPACE, signed, MESSAGE)
        named = find_signer(key, sock, []).sign(SPACE, MESSAGE)  # --key KEY: its .pub names it
        assert verify(named, SPACE, MESSAGE).fingerprint == wanted[0].fingerprint


def test_the_signers_file_is_read_as_openssh_reads_it(tmp_path: Path) -> None:
    key = keypair(tmp_path, "ana")
    signers = tmp_path / "allowed_signers"
    signers.write_text(f'# reviewers\nAna,root namespaces="git,ovtui-review" {public_line(key)}\n')
    loaded = load_signers(signers, "allowed_signers")
    assert loaded.keys_of("ana", SPACE) == loaded.keys_of("root", SPACE) != []
    assert loaded.keys_of("ana", "file") == []
    signers.write_text(f"ana cert-authority {public_line(key)}\n")
    with pytest.raises(OvtuiError, match=r"allowed_signers:1: cert-authority"):
        load_signers(signers, "allowed_signers")
    signers.write_text("ana ssh-ed25519 not-base64!\n")
    with pytest.raises(OvtuiError, match=r"allowed_signers:1: the key is not base64"):
        load_signers(signers, "allowed_signers")
