"""Python data read as Go values: kinds, type names, structs and truthiness (text/template's exec.go)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar


class GoStruct:
    """Base for Go struct values. Subclasses are frozen dataclasses whose fields are the Go fields.

    A field's JSON tag goes in its metadata: ``field(default="", metadata=json_tag("role"))``.
    ``go_methods`` maps Go method names to callables taking the struct (and any template arguments).
    A subclass with a Go ``String()`` method defines ``go_string``.
    """

    go_type: ClassVar[str] = "struct"
    go_pointer: ClassVar[bool] = False  # printed as &{...}, like a Go pointer to a struct
    go_methods: ClassVar[Mapping[str, Callable[..., Any]]] = {}

    def go_fields(self) -> list[tuple[str, Any]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]  # type: ignore[arg-type]


def json_tag(name: str, omitempty: bool = False) -> dict[str, Any]:
    """Field metadata giving a GoStruct field's JSON name, like Go's `json:"name,omitempty"` tag."""
    return {"json": (name, omitempty)}


def _go_kind(value: Any) -> str:
    if value is None:
        return "invalid"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "slice"
    if isinstance(value, dict):
        return "map"
    return "struct"


def _go_type_name(value: Any) -> str:
    """The Go type name Go would print for this value in error messages and %!verb(type=value)."""
    if isinstance(value, GoStruct):
        return value.go_type
    explicit = getattr(value, "go_type", None)
    if isinstance(explicit, str):
        return explicit
    return {
        "invalid": "<nil>",
        "bool": "bool",
        "int": "int",
        "float": "float64",
        "string": "string",
        "slice": "[]interface {}",
        "map": "map[string]interface {}",
    }.get(_go_kind(value), type(value).__name__)


def is_true(value: Any) -> bool:
    """Go template truthiness: false, 0, nil and empty strings, slices and maps are false."""
    kind = _go_kind(value)
    if kind == "invalid":
        return False
    if kind in ("bool", "int", "float"):
        return value != 0
    if kind in ("string", "slice", "map"):
        return len(value) > 0
    return True  # structs are always true
