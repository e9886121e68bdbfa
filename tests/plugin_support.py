"""Another package, installed for one test: a folder that, put on ``sys.path`` (``PYTHONPATH`` for
a subprocess), holds a package and its ``<name>-<version>.dist-info/`` (METADATA, entry_points.txt)
— what ``importlib.metadata`` finds of any installed distribution, so ovtui reads its entry points
exactly as it reads its own (``cli_support.run_ovtui(..., also_installed=site)``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

VERSION = "0.1"


def install_distribution(
    site: Path,
    package: str,
    files: dict[str, str],
    entry_points: dict[str, dict[str, str]],
) -> Path:
    """``site`` (made if needed) holding ``package`` with ``files`` (paths relative to the package,
    text dedented) and the metadata declaring ``entry_points`` (group → name → object reference)."""
    folder = site / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    info = site / f"{package}-{VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {package}\nVersion: {VERSION}\n", encoding="utf-8"
    )
    declared = [
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
        for group, entries in entry_points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(declared), encoding="utf-8")
    return site
