"""Real SSH keys and a real ssh-agent for the signing tests: ``ssh-keygen`` makes the keys,
``ssh-agent`` holds them (``ssh-add``, a passphrase given through ``SSH_ASKPASS``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


def keypair(folder: Path, name: str, passphrase: str = "") -> Path:
    """A new Ed25519 key ``folder/name`` (and ``name.pub``)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", name, "-f", str(key)], check=True
    )
    return key


def public_line(key: Path) -> str:
    return key.with_name(key.name + ".pub").read_text().strip()


def ssh_keygen_sign(key: Path, namespace: str, message: bytes) -> str:
    """``message`` signed by OpenSSH itself (``ssh-keygen -Y sign``)."""
    done = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key)],
        input=message,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


def ssh_keygen_verify(signers: Path, principal: str, namespace: str, signature: str, message: bytes) -> str:
    """OpenSSH's verdict on a signature: its output line (raises when it does not verify)."""
    sig = signers.with_name("checked.sig")
    sig.write_text(signature)
    done = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", principal, "-n", namespace, "-s", str(sig)],
        input=message,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


@contextmanager
def ssh_agent(folder: Path) -> Iterator[str]:
    """A running ssh-agent (its socket path); stopped, by its pid, at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    sock = folder / "agent.sock"
    # the parent exits once the socket is bound: it is there when run() returns
    done = subprocess.run(["ssh-agent", "-s", "-a", str(sock)], capture_output=True, text=True, check=True)
    found = re.search(r"SSH_AGENT_PID=(\d+)", done.stdout)
    assert found is not None, done.stdout
    try:
        yield str(sock)
    finally:
        with suppress(ProcessLookupError):
            os.kill(int(found.group(1)), signal.SIGTERM)


def ssh_add(sock: str, key: Path, passphrase: str = "") -> None:
    """Give the agent ``key``; a passphrase is typed by an askpass script, as a desktop would."""
    askpass = key.with_name("askpass.sh")
    askpass.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
    askpass.chmod(0o700)
    env = {**os.environ, "SSH_AUTH_SOCK": sock, "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force"}
    env.pop("DISPLAY", None)
    subprocess.run(
        ["ssh-add", "-q", str(key)], env=env, check=True, stdin=subprocess.DEVNULL, capture_output=True
    )
