"""The fault seam: what ``OVTUI_FAULT`` names fails, from the chosen match on; an error names the
target file, never its temp file; an append the disk cuts short leaves no torn line."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_ovtui

from ovtui.core.errors import OvtuiError
from ovtui.storage import fsio
from ovtui.storage.faults import FAULT_ENV, Fault, os_error_line, set_fault
from ovtui.storage.reading import read_bounded


@pytest.fixture(autouse=True)
def no_fault_after() -> Iterator[None]:
    yield
    set_fault(None)


def test_a_fault_fails_the_named_operation_from_the_chosen_match_on(tmp_path: Path) -> None:
    set_fault(Fault.parse(f"ENOSPC:write:{tmp_path}/*.md:2"))
    fsio.atomic_write_text(tmp_path / "a.md", "first", root=tmp_path)
    fsio.atomic_write_text(tmp_path / "a.txt", "not matched", root=tmp_path)
    with pytest.raises(OSError) as raised:
        fsio.atomic_write_text(tmp_path / "b.md", "second", root=tmp_path)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(tmp_path / "b.md")
    with pytest.raises(OSError):  # a full disk stays full
        fsio.atomic_write_text(tmp_path / "a.md", "third", root=tmp_path)
    assert (tmp_path / "a.md").read_text() == "first" and not (tmp_path / "b.md").exists()
    assert [p.name for p in tmp_path.iterdir() if fsio.is_temp_name(p.name)] == []
    assert read_bounded(tmp_path / "a.md", 100, what="x") == b"first"  # reads are not "write"


def test_reads_fail_where_a_read_fault_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    set_fault(Fault.parse(f"EACCES:read:{tmp_path}/*"))
    with pytest.raises(PermissionError) as raised:
        read_bounded(tmp_path / "x.json", 100, what="x")
    assert os_error_line(raised.value, os.path.basename).startswith("x.json: Permission denied (")


def test_an_error_names_the_target_and_not_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / ("n" * 240)  # a name that fits, whose temp file's name does not
    with pytest.raises(OSError) as raised:
        fsio.atomic_write_text(target, "x", root=tmp_path)
    assert raised.value.errno == errno.ENAMETOOLONG and raised.value.filename == str(target)


def test_an_append_cut_short_by_the_disk_is_taken_back(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    set_fault(Fault.parse(f"ENOSPC:write:{path}"))
    fd = fsio.open_in_place(path, os.O_WRONLY | os.O_APPEND, root=tmp_path)
    try:
        with pytest.raises(OSError) as raised:
            fsio.write_all(fd, b'{"b": 2}\n', path=path)
    finally:
        os.close(fd)
    assert raised.value.filename == str(path) and path.read_bytes() == b'{"a": 1}\n'


@pytest.mark.parametrize(
    "spec", ["ENOSPC", "NOPE:write:*", "ENOSPC:scribble:*", "ENOSPC:write:*:0", "errorcode:write:*"]
)
def test_a_wrong_fault_is_one_line_naming_it(spec: str) -> None:
    with pytest.raises(OvtuiError, match=FAULT_ENV):
        Fault.parse(spec)


def test_a_wrong_fault_in_the_environment_stops_a_command_in_one_line(tmp_path: Path) -> None:
    done = run_ovtui("init", "new", cwd=tmp_path, timeout=60, env={FAULT_ENV: "ENOSPC:scribble:*"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ovtui: error: {FAULT_ENV}='ENOSPC:scribble:*': 'scribble' is not")
