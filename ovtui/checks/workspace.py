"""``ovtui check``: validate a workspace without changing it (``--fix`` changes one thing: it moves
files in a former layout, ``fix_layouts``).

Every memory file in every declared type folder, the peers' spaces included (format, name, declared
field types and enums, the fields its path is named by), the layouts (a type's files in a former
layout are a note — they work, but OpenViking does not read them — and a problem beside files in
the current one), every line of ``datasets/*/{train,validation,test}.jsonl`` as a Case and as
a case of the workspace's environment (``[trainer] environment`` says what it needs of one),
``ovtui.toml`` (its schema, and every component name it gives against the registry), and the plan
files waiting for review (one that does not read as a plan is skipped by Review and ``ovtui
review``, so it is named here). Each problem names the file and line so an editor can jump to it;
experience lines the configured agent cannot act on are notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ovtui.checks.cases import records, validation_problems
from ovtui.core.allowed_signers import load_signers
from ovtui.core.bounds import MAX_CONFIG_BYTES, MAX_DATASET_LINE_BYTES
from ovtui.core.config import OvtuiConfig
from ovtui.core.domain import Case
from ovtui.core.errors import ConfigError, MemoryFormatError, OvtuiError, first_problem
from ovtui.core.fileformat import FIELDS_OPEN, MemoryFile, parse_memory, quoted_marker_line
from ovtui.core.interfaces import ExperienceReader
from ovtui.core.names import same_name, validate_name
from ovtui.llm.tokens import rank_file_problem
from ovtui.memory.cases import case_from_memory
from ovtui.memory.chain import ChainVerifier
from ovtui.memory.layout import MoveResult, layout_shape, move_former_files, space_layouts
from ovtui.memory.ledger import UseLedger
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import CASES, JSON_TYPES, FieldDecl, MemoryTypeSchema
from ovtui.plugins.environment import Environment
from ovtui.storage.config_file import load_config
from ovtui.storage.paths import CONFIG_FILE, PENDING_FOLDER, peer_space, split_peer
from ovtui.storage.reading import jsonl_lines, read_bounded
from ovtui.train.review.gates.readability import unread_notes
from ovtui.train.review.pending import read_plan
from ovtui.wiring.registry import ENVIRONMENTS, agent_reader, names_too, unknown_names

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class CheckReport:
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    # Experience lines the agent cannot act on, and who that agent is: many in a workspace whose
    # experiences are also written for people, so they are counted unless asked for one by one.
    unread_lines: list[Problem] = field(default_factory=list)
    unread_by: str = ""
    memory_files: dict[str, int] = field(default_factory=dict)
    dataset_lines: int = 0
    config: str = "defaults"

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.memory_files.items()) if n) or "none"
        total = sum(self.memory_files.values())
        return f"{total} memory files ({kinds}), {self.dataset_lines} dataset cases, config: {self.config}"


def _line_of_key(text: str, key: str) -> int:
    """The line of ``"key":`` in the MEMORY_FIELDS block (1 if not found)."""
    at = text.rfind(f'"{key}":')
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _type_ok(decl: FieldDecl, value: Any) -> bool:
    if decl.type in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, JSON_TYPES[decl.type])


def _naming_problems(schema: MemoryTypeSchema, memory: MemoryFile, inner: str) -> list[tuple[str, str]]:
    """(field, message) for each field a path component is named by that names another one
    (``inner``: the path inside its space; read by the layout it is in)."""
    parts = inner[len(schema.directory) + 1 :].split("/")
    template = next((t for t in schema.templates() if t.count("/") == len(parts) - 1), None)
    if template is None:
        return []
    out: list[tuple[str, str]] = []
    for pattern, part in zip(template.split("/"), parts, strict=True):
        key = pattern.removesuffix(".md")
        if not (key.startswith("{") and key.endswith("}")) or "{" in key[1:]:
            continue  # a part with more than one value (trajectories) or a fixed one
        key, stem = key[1:-1], part.removesuffix(".md")
        value = memory.fields.get(key)
        if isinstance(value, str) and value and not same_name(value, stem):
            what = "file name" if part.endswith(".md") else "folder name"
            out.append((key, f"{key} {value!r} does not match the {what} {stem!r}"))
    return out


def _field_problems(schema: MemoryTypeSchema, memory: MemoryFile, inner: str) -> list[tuple[str, str]]:
    """(field, message) for each field that contradicts the type's declaration."""
    out: list[tuple[str, str]] = []
    fields = memory.fields
    for decl in schema.fields:
        if decl.name == "content" or decl.name not in fields:
            continue
        value = fields[decl.name]
        if not _type_ok(decl, value):
            out.append(
                (decl.name, f"field {decl.name!r} should be {decl.type}, found {type(value).__name__}")
            )
        elif decl.enum and value not in decl.enum:
            out.append(
                (decl.name, f"field {decl.name!r} is {value!r}, expected one of {', '.join(decl.enum)}")
            )
    version = fields.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        out.append(("version", f"field 'version' should be a non-negative integer, found {version!r}"))
    if fields.get("memory_type") not in (None, schema.memory_type):
        out.append(
            ("memory_type", f"memory_type is {fields['memory_type']!r} in the {schema.memory_type} folder")
        )
    out += _naming_problems(schema, memory, inner)
    for key in ("links", "backlinks"):
        links = fields.get(key)
        if links is not None and not (
            isinstance(links, list)
            and all(isinstance(x, dict) and "from_uri" in x and "to_uri" in x for x in links)
        ):
            out.append((key, f"{key} should be a list of objects with from_uri and to_uri"))
    return out


def check_memories(store: MemoryStore, report: CheckReport) -> None:
    """Every memory file of every type, in the user's own space and in each peer's space (the types
    with ``peer_enabled``); a peer folder with an invalid name is a problem of its own."""
    bad_peers: list[MemoryFormatError] = []
    spaces: list[str | None] = [None, *store.peers(bad_peers)]
    report.problems += [Problem(p.source, 1, p.reason) for p in bad_peers]
    for memory_type in store.registry.names():
        schema = store.registry.get(memory_type)
        report.memory_files[memory_type] = 0
        for peer in spaces:
            if peer is not None and not schema.peer_enabled:
                continue
            files = store.list_paths(memory_type, peer)
            report.memory_files[memory_type] += len(files)
            for path in files:
                _check_file(store, schema, path, report)


def check_layouts(store: MemoryStore, report: CheckReport) -> None:
    """Files in a former layout of their type: a note where they are the only ones of the type in
    their space (they work, but OpenViking does not see them), a problem beside files in the current
    layout (one kind of memory in two places); each says what ``ovtui check --fix`` does."""
    for space in space_layouts(store):
        schema, former = space.schema, space.former
        prefix = peer_space(space.peer_id)
        old = prefix + layout_shape(schema, schema.former_filename_templates[0])
        new = prefix + layout_shape(schema, schema.filename_template)
        whose = f"peer {space.peer_id}'s " if space.peer_id else ""
        moved = f"`ovtui check --fix` moves them to {new}, as OpenViking files them (one History record)"
        if space.current:
            message = (
                f"{whose}{schema.memory_type} are in two layouts: {len(former)} file(s) in ovtui's former "
                f"{old} and {space.current} in {new}; {moved}"
            )
            report.problems.append(Problem(former[0].rel, 1, message))
        else:
            message = (
                f"{len(former)} {whose}{schema.memory_type} file(s) in ovtui's former layout {old}, "
                f"which OpenViking does not read; {moved}"
            )
            report.notes.append(Problem(former[0].rel, 1, message))


def fix_layouts(store: MemoryStore) -> MoveResult:
    """``ovtui check --fix``: move every file in a former layout to its type's current one."""
    return move_former_files(store)


def _check_file(store: MemoryStore, schema: MemoryTypeSchema, path: Path, report: CheckReport) -> None:
    rel = store.paths.relative(path)
    try:
        validate_name(path.stem, what="file name")
        text = store.read_text(path)
        memory = parse_memory(text, source=rel)
    except MemoryFormatError as exc:
        report.problems.append(Problem(exc.source, exc.line or 1, exc.reason))
        return
    except (OvtuiError, OSError) as exc:
        report.problems.append(Problem(rel, 1, str(exc)))
        return
    if FIELDS_OPEN not in text:
        report.notes.append(
            Problem(rel, 1, "no MEMORY_FIELDS comment: read as a hand-written note with no fields")
        )
    for key, message in _field_problems(schema, memory, split_peer(rel)[1]):
        report.problems.append(Problem(rel, _line_of_key(text, key), message))
    if schema.memory_type == CASES:
        _check_case(memory, rel, text, report)
    quoted = quoted_marker_line(memory, text)
    if quoted is not None:
        report.problems.append(
            Problem(
                rel,
                quoted,
                "the body quotes a '<!-- MEMORY_FIELDS' marker: OpenViking would take it as the "
                "fields comment and lose the real fields (quote it without the '<!--')",
            )
        )


def check_file_names(store: MemoryStore, report: CheckReport) -> None:
    """Memory files whose names ovtui would never write: file names are lower-cased from the
    memory's name (as OpenViking writes them), so every plan item for ``Refund_Request.md`` targets
    ``refund_request.md`` and is refused; two files whose names differ only in case name one memory."""
    spaces: list[str | None] = [None, *store.peers()]
    for memory_type in store.registry.names():
        schema = store.registry.get(memory_type)
        if not schema.placeholders():
            continue  # a one-file type: its name is fixed by the declaration
        for peer in spaces if schema.peer_enabled else [None]:
            by_folded: dict[str, list[Path]] = {}
            for path in store.list_paths(memory_type, peer):
                by_folded.setdefault(str(path.with_name(path.name.lower())), []).append(path)
            for folded, paths in by_folded.items():
                _report_case_names(store, Path(folded), paths, report)


def _report_case_names(store: MemoryStore, folded: Path, paths: list[Path], report: CheckReport) -> None:
    for path in paths:
        if path.name == folded.name:
            continue
        rel = store.paths.relative(path)
        if len(paths) > 1:
            message = (
                f"collides with {folded.name} ignoring case: both name one memory; merge this file "
                f"into {folded.name} and remove {path.name}"
            )
        else:
            message = (
                f"ovtui writes this memory as {folded.name} (file names are lower-case, as OpenViking "
                f"writes them), so every plan item for it is refused: rename {path.name} to {folded.name}"
            )
        report.problems.append(Problem(rel, 1, message))


def _check_case(memory: MemoryFile, rel: str, text: str, report: CheckReport) -> None:
    """A case memory (of either tool) must be convertible to a training Case."""
    try:
        case_from_memory(memory, source=rel)
    except MemoryFormatError as exc:
        key = next((k for k in ("case_name", "input", "rubric") if f"'{k}'" in exc.reason), "case_name")
        report.problems.append(Problem(rel, _line_of_key(text, key), f"not a training case: {exc.reason}"))


CaseChecker = Callable[[Case], list[str]]


def check_datasets(store: MemoryStore, report: CheckReport, environment: CaseChecker | None = None) -> None:
    folder = store.paths.datasets
    if not folder.is_dir():
        return
    for dataset in sorted(p for p in folder.iterdir() if p.is_dir()):
        for split in SPLITS:
            path = dataset / f"{split}.jsonl"
            if not path.is_file():
                continue
            rel = store.paths.relative(path)
            try:
                _check_cases(jsonl_lines(path), rel, report, environment)
            except OSError as exc:
                report.problems.append(Problem(rel, 1, f"cannot be read: {exc}"))


def _check_cases(
    lines: Iterable[tuple[int, bytes | None]], rel: str, report: CheckReport, environment: CaseChecker | None
) -> None:
    for record in records(lines, MAX_DATASET_LINE_BYTES):
        if record.value is None:
            report.problems.append(Problem(rel, record.first_line, record.error))
            continue
        case, problems = validation_problems(record.value)
        if record.error:
            problems.insert(0, record.error)
        if case is not None and environment is not None:
            problems += environment(case)
        if case is not None and not problems:
            report.dataset_lines += 1
        # One case, one problem: everything wrong with it on one line.
        if problems:
            report.problems.append(Problem(rel, record.first_line, "; ".join(problems)))


def check_config(store: MemoryStore, report: CheckReport) -> OvtuiConfig | None:
    """The schema of ``ovtui.toml`` and the component names it gives; the configuration when both
    hold (the defaults when there is no file), None otherwise."""
    path = store.paths.config_file
    if not path.exists():
        return OvtuiConfig()
    try:
        config = load_config(store.paths.root)
    except ConfigError as exc:
        lines = str(names_too(exc)).splitlines()
        head = lines[0].split(": ", 1)[-1]
        _report_config(store, report, head, [ln.strip() for ln in lines[1:] if ln.strip()])
        return None
    report.config = CONFIG_FILE
    unknown = [f"[{key}] {problem}" for key, problem in unknown_names(config)]
    _report_config(store, report, "", unknown)
    tokenizer = rank_file_problem(config.tokens, store.paths.root)
    if tokenizer is not None:  # the token figures fall back to the estimate: said, not fatal
        _report_config(store, report, "", [f"[tokens.{tokenizer.key}] {tokenizer.message}"])
    return None if unknown else config


def _report_config(store: MemoryStore, report: CheckReport, head: str, details: list[str]) -> None:
    """Each ``[dotted.key] message`` of ``details`` at the line that sets the key (``head``, the
    error's first line, when there are none)."""
    if not head and not details:
        return
    try:
        text = read_bounded(store.paths.config_file, MAX_CONFIG_BYTES, what="the configuration").decode(
            "utf-8"
        )
    except (OvtuiError, OSError, UnicodeDecodeError):
        text = ""
    if not details:
        located = re.search(r"line (\d+)", head)
        report.problems.append(Problem(CONFIG_FILE, int(located.group(1)) if located else 1, head))
    for detail in details:
        match = re.match(r"\[(?P<loc>[^\]]*)\] (?P<msg>.*)", detail)
        loc, msg = (match.group("loc"), match.group("msg")) if match else ("", detail)
        line = _line_of_setting(text, loc.split(".") if loc else [])
        report.problems.append(Problem(CONFIG_FILE, line, f"[{loc}] {msg}" if loc else msg))


def _line_of_setting(text: str, loc: list[str]) -> int:
    """The line of ovtui.toml that sets ``loc`` (``["trainer", "epochs"]``): the key's line within
    its table where the table has a header, else the first line setting that key, else the
    table's header (an unknown table), else 1."""
    if not loc:
        return 1
    key, start = loc[-1], 0
    header = re.search(rf"(?m)^\s*\[\s*{re.escape('.'.join(loc[:-1]) or key)}\s*\]", text)
    if header is not None:
        start = header.end()
        if len(loc) == 1:
            return text.count("\n", 0, header.start()) + 1
    found = re.compile(rf"(?m)^\s*{re.escape(key)}\s*=").search(text, start)
    if found is None and start:
        found = re.compile(rf"(?m)^\s*{re.escape(key)}\s*=").search(text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def check_pending(store: MemoryStore, report: CheckReport) -> None:
    folder = store.paths.root / PENDING_FOLDER
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            read_plan(path)
        except ValidationError as exc:
            problem = f"not a pending plan, skipped by Review: {first_problem(exc, 'file')}"
            report.problems.append(Problem(store.paths.relative(path), 1, problem))
        except OvtuiError as exc:
            report.problems.append(Problem(store.paths.relative(path), 1, f"skipped by Review: {exc}"))
        except OSError as exc:
            cause = exc.strerror or str(exc)
            report.problems.append(Problem(store.paths.relative(path), 1, f"cannot read: {cause}"))


def check_ledger(store: MemoryStore, report: CheckReport) -> None:
    """The use ledger reads (its log, its summary, an older ovtui's hotness files): one that does
    not is named with what to do, as every recorded use will say it again."""
    ledger = UseLedger(store.paths)
    try:
        ledger.usage()
    except OvtuiError as exc:
        message = str(exc)
        files = (ledger.summary_path, ledger.path, *ledger.legacy_paths)
        for rel in (store.paths.relative(path) for path in files):
            if message.startswith(rel):
                report.problems.append(Problem(rel, 1, message[len(rel) :].lstrip(": ")))
                return
        report.problems.append(Problem(store.paths.relative(ledger.summary_path), 1, message))


def check_signers(store: MemoryStore, config: OvtuiConfig, report: CheckReport) -> None:
    """``[review] signers`` can be read; without it, a two-person rule is said to count names."""
    review = config.review
    if review.signers is None:
        if review.second_approver_for:
            line = _line_of_setting(_config_text(store), ["review", "second_approver_for"])
            report.notes.append(
                Problem(
                    CONFIG_FILE,
                    line,
                    "[review] second_approver_for without [review] signers: reviewer names are labels, "
                    "so the two-person rule is not proof that two people approved (docs/review.md)",
                )
            )
        return
    try:
        load_signers(store.paths.root / review.signers, review.signers)
    except OvtuiError as exc:
        line = _line_of_setting(_config_text(store), ["review", "signers"])
        report.problems.append(Problem(CONFIG_FILE, line, f"[review] signers: {exc}"))


def _config_text(store: MemoryStore) -> str:
    try:
        return store.paths.config_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def check_history(store: MemoryStore, report: CheckReport) -> None:
    """The history's hash chain and the records' targets (``ovtui history verify``); that records
    predate the chain is a note (nothing could check them before)."""
    found = ChainVerifier(store).verify()
    for problem in found.problems:
        path, _, message = problem.partition(": ")
        report.problems.append(Problem(path, 1, message))
    if found.earlier:
        report.notes.append(Problem("history", 1, found.summary()))


def check_workspace(store: MemoryStore) -> CheckReport:
    report = CheckReport()
    config = check_config(store, report)
    if config is not None:
        check_signers(store, config, report)
    check_memories(store, report)
    check_layouts(store, report)
    check_file_names(store, report)
    check_pending(store, report)
    check_ledger(store, report)
    check_history(store, report)
    if config is None:
        check_datasets(store, report)  # the environment is not known for sure: the cases as Cases only
        return report
    environments: dict[str, Environment] = {}

    def environment(name: str) -> Environment:
        if name not in environments:
            environments[name] = ENVIRONMENTS.get(name)(config)
        return environments[name]

    try:  # registered, but maybe not available here (its data not installed): a config problem
        cases_for = environment(config.trainer.environment)
    except OvtuiError as exc:
        _report_config(store, report, "", [f"[trainer.environment] {exc}"])
        check_datasets(store, report)
        return report
    check_datasets(store, report, cases_for.case_problems)
    try:
        reader = agent_reader(config.trainer.agent, environment)
    except OvtuiError as exc:
        _report_config(store, report, "", [f"[trainer.agent] {exc}"])
        return report
    note_unread_lines(store, report, reader)
    return report


def note_unread_lines(store: MemoryStore, report: CheckReport, reader: ExperienceReader | None) -> None:
    """Experience lines the agent cannot act on: notes (a person may write for people too), not errors."""
    if reader is None:
        return
    report.unread_by = reader.name
    for path in store.list_paths("experiences"):
        rel = store.paths.relative(path)
        try:
            content = parse_memory(store.read_text(path), source=rel).content
        except (OvtuiError, OSError):
            continue  # reported by check_memories
        for number, note in unread_notes(reader, content):
            report.unread_lines.append(Problem(rel, number, note))
