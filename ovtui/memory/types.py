"""Memory types are data: one JSON declaration per type.

A declaration says where files of the type live, how a file is named, which fields it has and
how each field merges (see ``merge_ops``), and whether a session commit's model extraction asks for
it and may edit its existing files. The JSON schema an LLM must answer is generated from the same
declarations, so the prompt, the validation and the files can never disagree.

Everything that handles a memory file (the stager and updater, field diff, Review, History,
revert, ``ovtui check``, the Memories screen, the session extractor) looks its type up here: adding
a type is adding a JSON file. The declarations are read from every folder named by an entry point
of the ``ovtui.memory_types`` group: ovtui's own (``types/`` beside this module) and any package's
(an entry point naming a package whose ``*.json`` files are declarations). A type declared twice
is a configuration error naming both files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from string import Formatter
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ovtui.core import plugins
from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.core.errors import ConfigError, UnsafePathError

# The types the training loop itself names (defined once, in the file format; re-exported here, where
# everything outside the domain imports them). Every other type is only ever looked up by name.
from ovtui.core.fileformat import CASES as CASES
from ovtui.core.fileformat import EXPERIENCES as EXPERIENCES
from ovtui.core.fileformat import TRAJECTORIES as TRAJECTORIES
from ovtui.core.names import file_stem, validate_name
from ovtui.storage.paths import split_peer

MEMORY_TYPES_GROUP = "ovtui.memory_types"  # entry points naming folders of declarations
# ovtui's own declarations (its entry point in MEMORY_TYPES_GROUP names this folder).
BUNDLED_TYPES = resources.files("ovtui.memory") / "types"

# Filename placeholders filled from the time a file is created, not from its fields.
TIME_PLACEHOLDERS = frozenset({"timestamp", "year", "month", "day"})

MergeOpName = Literal["patch", "replace", "sum", "immutable"]

# JSON-schema type names → the Python types a parsed JSON value of that type has.
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


# ``fill`` of a field: a value ovtui knows better than a model, given when the memory leaves it out.
# ``owner``: whose memory it is — the peer's id in a peer's space, the workspace user in the user's own.
FillName = Literal["owner"]


class FieldDecl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: Literal["string", "integer", "number", "boolean", "array", "object"] = "string"
    merge_op: MergeOpName = "replace"
    required: bool = False
    description: str = ""
    enum: list[str] | None = None
    # The value a new file starts with (OpenViking's ``init_value``: identity.md's creature).
    init_value: Any = None
    fill: FillName | None = None


class MemoryTypeSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_type: str
    description: str
    directory: str
    # Relative to ``directory``; may hold folders ("{category}/{name}.md"). Placeholders are the
    # type's fields, or the creation time (``timestamp``, ``year``, ``month``, ``day``).
    filename_template: str
    # The field that names a file of the type; None for a type with one fixed file (profile).
    name_field: str | None
    operation_mode: Literal["upsert", "add_only"] = "upsert"
    stage: Literal["user", "agent"] = "user"
    peer_enabled: bool = True
    # Whether a session commit's model extraction asks for memories of the type; ``when_listed``:
    # only for a session whose MemoryPolicy names the type in ``memory_types`` (identity, soul).
    extract_from_sessions: bool | Literal["when_listed"] = False
    # Whether that extraction may edit existing files of the type: the most similar ones are shown
    # to the model (a one-file type's file whole), which may change them; otherwise it only adds.
    editable_by_model: bool = False
    # What the extraction's instruction says the type is for (its description when empty).
    extraction_guidance: str = ""
    # Shown to the model as the shape of the body it writes.
    content_template: str | None = None
    # For a type whose body is made from its fields (identity.md, soul.md): ``{field}`` placeholders
    # filled by ovtui whenever it writes a file of the type; the model gives fields, not the body.
    body_template: str | None = None
    # Filename templates files of the type had in earlier ovtui layouts: still read (listed, loaded,
    # checked, edited in place) until ``ovtui check --fix`` moves them to ``filename_template``.
    former_filename_templates: list[str] = Field(default_factory=list)
    fields: list[FieldDecl] = Field(default_factory=list)

    def field(self, name: str) -> FieldDecl | None:
        return next((f for f in self.fields if f.name == name), None)

    def filled(self, fields: Mapping[str, Any], owner: str) -> dict[str, Any]:
        """``fields`` with every ``fill`` field they leave out given (``owner``: whose memory it is)."""
        out = dict(fields)
        for decl in self.fields:
            if decl.fill == "owner" and not out.get(decl.name):
                out[decl.name] = owner
        return out

    def initial_fields(self) -> dict[str, Any]:
        """The declared ``init_value`` of each field that has one (what a new file starts with)."""
        return {f.name: f.init_value for f in self.fields if f.init_value is not None}

    def body(self, fields: Mapping[str, Any]) -> str | None:
        """The body ``body_template`` makes of ``fields`` (a missing field is empty); None when the
        type's body is written, not made."""
        if self.body_template is None:
            return None
        values = {f.name: "" if fields.get(f.name) is None else str(fields[f.name]) for f in self.fields}
        return self.body_template.format_map(values)

    def placeholders(self) -> list[str]:
        return _placeholders(self.filename_template)

    @property
    def timestamped(self) -> bool:
        """True when a file's name carries its creation time (so it cannot be known in advance)."""
        return bool(TIME_PLACEHOLDERS.intersection(self.placeholders()))

    def filename(
        self,
        name: str | None = None,
        *,
        when: datetime | None = None,
        fields: Mapping[str, Any] | None = None,
        template: str | None = None,
    ) -> str:
        """The file name (relative to ``directory``) of a memory called ``name``; other placeholders
        come from ``fields`` and the time. Lower-cased as OpenViking names files (``Seat_Change``
        lives in ``seat_change.md``; ``Alice``'s preferences in ``alice/``), and validated: every
        value becomes a path component. ``template``: one of ``templates()`` (a former layout)."""
        template = template or self.filename_template
        moment = when or datetime.now(UTC)
        times = {
            "timestamp": moment.strftime("%Y%m%d%H%M%S"),
            "year": moment.strftime("%Y"),
            "month": moment.strftime("%m"),
            "day": moment.strftime("%d"),
        }
        values: dict[str, str] = {}
        for key in _placeholders(template):
            if key in TIME_PLACEHOLDERS:
                values[key] = times[key]
                continue
            value = name if key == self.name_field else (fields or {}).get(key)
            if not isinstance(value, str) or not value:
                raise ConfigError(f"a {self.memory_type} file name needs the field {key!r}")
            values[key] = file_stem(value, what=f"{self.memory_type} {key}")
        filename = template.format(**values)
        for part in filename.split("/"):  # the whole name, suffixes included, is what the reader checks
            stem, dot, _extension = part.rpartition(".")
            validate_name(stem if dot else part, what=f"{self.memory_type} file name")
        return filename

    def holds(self, rel: str) -> bool:
        """Whether a workspace-relative path is where a file of this type lives (by shape only), in
        the current layout or a former one."""
        return any(_fits(template, self.directory, rel) for template in self.templates())

    def holds_former(self, rel: str) -> bool:
        """Whether ``rel`` is where a file of this type lived in a former layout only."""
        return not _fits(self.filename_template, self.directory, rel) and self.holds(rel)

    def templates(self) -> list[str]:
        """The filename templates files of the type are read from: the current one first."""
        return [self.filename_template, *self.former_filename_templates]

    def naming(self) -> str:
        """How files of the type are named, for prompts."""
        if self.name_field is None:
            return f"One file ({self.filename_template}), edited in place"
        return f"One item per file, named by `{self.name_field}`"

    def name_of(self, fields: Mapping[str, Any], rel: str) -> str:
        """The display name of a file: its name field, else the file name without ``.md``."""
        value = fields.get(self.name_field) if self.name_field else None
        return value if isinstance(value, str) and value else rel.rpartition("/")[2].removesuffix(".md")

    def item_json_schema(self) -> dict[str, Any]:
        """JSON schema of one memory operation of this type, for structured LLM output."""
        props: dict[str, Any] = {}
        for f in self.fields:
            prop: dict[str, Any] = {"type": f.type, "description": f.description}
            if f.type == "array":
                prop["items"] = {"type": "string"}
            if f.enum:
                prop["enum"] = f.enum
            if f.merge_op == "patch" and self.operation_mode == "upsert":  # an add-only file is never edited
                prop["description"] += (
                    ". For an existing file give SEARCH/REPLACE blocks "
                    "(<<<<<<< SEARCH / ======= / >>>>>>> REPLACE); each SEARCH must match exactly once."
                )
            props[f.name] = prop
        required = [f.name for f in self.fields if f.required]
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


class MemoryTypeRegistry:
    def __init__(self, schemas: list[MemoryTypeSchema]) -> None:
        self._by_name = {s.memory_type: s for s in schemas}

    def extracted_from_sessions(self, listed: Iterable[str] | None = None) -> list[str]:
        """The types a session commit's model extraction asks for, by name; ``listed``: the types a
        session's MemoryPolicy names (None: it names none), which add the ``when_listed`` ones."""
        named = set(listed or ())
        return [
            name
            for name in self.names()
            if self._by_name[name].extract_from_sessions is True
            or (self._by_name[name].extract_from_sessions == "when_listed" and name in named)
        ]

    def get(self, memory_type: str) -> MemoryTypeSchema:
        try:
            return self._by_name[memory_type]
        except KeyError:
            raise ConfigError(
                f"unknown memory type {memory_type!r}; known: {sorted(self._by_name)}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def browse_order(self) -> list[str]:
        """Experiences first (the policy being trained), then the others by name."""
        return sorted(self._by_name, key=lambda name: (name != EXPERIENCES, name))

    def for_path(self, rel: str) -> MemoryTypeSchema | None:
        """The type whose files live at the workspace-relative path ``rel`` (the deepest match); in a
        peer's space (``peers/<peer_id>/…``) only a type with ``peer_enabled``."""
        try:
            peer, inner = split_peer(rel)
        except UnsafePathError:
            return None
        found = [s for s in self._by_name.values() if s.holds(inner) and (peer is None or s.peer_enabled)]
        return max(found, key=lambda s: len(s.directory), default=None)

    def operations_json_schema(self, memory_types: list[str]) -> dict[str, Any]:
        """Schema of an LLM answer: per type, a list of upserts; plus deletes by uri."""
        props: dict[str, Any] = {
            t: {"type": "array", "items": self.get(t).item_json_schema()} for t in memory_types
        }
        props["delete_uris"] = {"type": "array", "items": {"type": "string"}}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _placeholders(template: str) -> list[str]:
    return [field for _, field, _, _ in Formatter().parse(template) if field]


def _fits(template: str, directory: str, rel: str) -> bool:
    """Whether ``rel`` has the shape ``directory/template`` gives (its folder depth, or the one
    fixed file of a template without placeholders)."""
    prefix = directory + "/"
    if not rel.startswith(prefix) or not rel.endswith(".md"):
        return False
    rest = rel[len(prefix) :]
    if not _placeholders(template):
        return rest == template
    return rest.count("/") == template.count("/")


def _load(text: str, source: str) -> MemoryTypeSchema:
    try:
        return MemoryTypeSchema.model_validate(parse_json(text, source=source))
    except (JsonError, ValidationError) as exc:
        raise ConfigError(f"memory type declaration {source} is invalid: {exc}") from exc


def declaration_folders() -> list[tuple[str, Traversable]]:
    """(who declared it, the folder) for every entry point of ``ovtui.memory_types``: a package
    (its folder) or a folder object."""
    folders: list[tuple[str, Traversable]] = []
    for entries in plugins.declared(MEMORY_TYPES_GROUP).values():
        for entry in entries:
            named = plugins.load(entry)
            folder = resources.files(named) if isinstance(named, ModuleType) else named
            if not isinstance(folder, Traversable):
                raise ConfigError(
                    f"the entry point {entry.name} = {entry.value!r} (group {MEMORY_TYPES_GROUP}) of "
                    f"{plugins.distribution(entry)} names neither a package nor a folder"
                )
            folders.append((f"{entry.name} ({plugins.distribution(entry)})", folder))
    return folders


def load_declarations(folders: Iterable[tuple[str, Traversable]]) -> MemoryTypeRegistry:
    """Every ``*.json`` declaration of ``folders``; a type declared twice names both files."""
    found: dict[str, tuple[str, MemoryTypeSchema]] = {}
    for owner, folder in folders:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".json"):
                continue
            source = f"{entry.name} of {owner}"
            schema = _load(entry.read_text(encoding="utf-8"), source)
            if schema.memory_type in found:
                raise ConfigError(
                    f"memory type {schema.memory_type!r} is declared twice: by "
                    f"{found[schema.memory_type][0]} and by {source}"
                )
            found[schema.memory_type] = (source, schema)
    if not found:
        raise ConfigError(
            f"no memory type is declared (entry point group {MEMORY_TYPES_GROUP}): ovtui's package "
            "metadata is missing; reinstall it (pip install -e .)"
        )
    return MemoryTypeRegistry([schema for _, schema in found.values()])


@cache
def default_registry() -> MemoryTypeRegistry:
    return load_declarations(declaration_folders())
