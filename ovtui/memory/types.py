"""Memory types are data: one JSON declaration per type, bundled in ``types/``.

A declaration says where files of the type live, how a file is named, which fields it has and
how each field merges (see ``merge_ops``). The JSON schema an LLM must answer is generated from
the same declarations, so the prompt, the validation and the files can never disagree.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ovtui.errors import ConfigError
from ovtui.workspace.paths import file_stem, validate_name

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


class FieldDecl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: Literal["string", "integer", "number", "boolean", "array", "object"] = "string"
    merge_op: MergeOpName = "replace"
    required: bool = False
    description: str = ""
    enum: list[str] | None = None


class MemoryTypeSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_type: str
    description: str
    directory: str
    filename_template: str
    name_field: str
    operation_mode: Literal["upsert", "add_only"] = "upsert"
    stage: Literal["user", "agent"] = "user"
    peer_enabled: bool = True
    content_template: str | None = None
    fields: list[FieldDecl] = Field(default_factory=list)

    def field(self, name: str) -> FieldDecl | None:
        return next((f for f in self.fields if f.name == name), None)

    def filename(self, name: str, *, when: datetime | None = None) -> str:
        """The file name for a memory called ``name``: lower-cased as OpenViking names files, and
        validated whole (it becomes a path, and the reader checks the same rules)."""
        values = {self.name_field: file_stem(name, what=f"{self.memory_type} name")}
        if "{timestamp}" in self.filename_template:
            values["timestamp"] = (when or datetime.now(UTC)).strftime("%Y%m%d%H%M%S")
        filename = self.filename_template.format(**values)
        stem, dot, _extension = filename.rpartition(".")
        validate_name(stem if dot else filename, what=f"{self.memory_type} file name")
        return filename

    def item_json_schema(self) -> dict[str, Any]:
        """JSON schema of one memory operation of this type, for structured LLM output."""
        props: dict[str, Any] = {}
        for f in self.fields:
            prop: dict[str, Any] = {"type": f.type, "description": f.description}
            if f.type == "array":
                prop["items"] = {"type": "string"}
            if f.enum:
                prop["enum"] = f.enum
            if f.merge_op == "patch":
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

    def get(self, memory_type: str) -> MemoryTypeSchema:
        try:
            return self._by_name[memory_type]
        except KeyError:
            raise ConfigError(
                f"unknown memory type {memory_type!r}; known: {sorted(self._by_name)}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def for_directory(self, directory: str) -> MemoryTypeSchema | None:
        return next((s for s in self._by_name.values() if s.directory == directory), None)

    def operations_json_schema(self, memory_types: list[str]) -> dict[str, Any]:
        """Schema of an LLM answer: per type, a list of upserts; plus deletes by uri."""
        props: dict[str, Any] = {
            t: {"type": "array", "items": self.get(t).item_json_schema()} for t in memory_types
        }
        props["delete_uris"] = {"type": "array", "items": {"type": "string"}}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _load(text: str, source: str) -> MemoryTypeSchema:
    try:
        return MemoryTypeSchema.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ConfigError(f"memory type declaration {source} is invalid: {exc}") from exc


@cache
def default_registry() -> MemoryTypeRegistry:
    folder = resources.files("ovtui.memory") / "types"
    schemas = [
        _load(entry.read_text(encoding="utf-8"), entry.name)
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]
    return MemoryTypeRegistry(schemas)
