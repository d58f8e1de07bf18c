"""The keys a framework's config schema knows, with the type and choices of each.

A schema comes from the framework itself when it is installed (dataclass fields, pydantic model
fields), else from the record of its wheels (``frameworks/record.py``, written by ``tools/version_facts.py``)
at the target version. Types are reduced to what a config file can
hold: bool, int, float, str, list, dict, a set of allowed values, or anything.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import json
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from mldebug_cli.frameworks import record

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trainer_facts import TrainerFacts
    from mldebug_cli.frameworks.versions import TargetVersions
    from mldebug_cli.sources.config_file import ConfigFile

ANY = "any"
_SCALARS = {"bool": "bool", "int": "int", "float": "float", "str": "str", "Path": "str", "PathLike": "str"}
_LISTS = ("list", "List", "tuple", "Tuple", "Sequence", "set", "Set")
_DICTS = ("dict", "Dict", "Mapping", "MutableMapping")
_NONE = ("None", "NoneType")


@dataclass(frozen=True)
class KeyType:
    """What values a key takes: ``kinds`` (bool, int, float, str, list, dict, any) and, for a closed set, ``choices``."""

    kinds: frozenset[str] = frozenset({ANY})
    choices: tuple[Any, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kinds": sorted(self.kinds)}
        if self.choices is not None:
            out["choices"] = list(self.choices)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeyType:
        choices = data.get("choices")
        return cls(frozenset(data.get("kinds", [ANY])), None if choices is None else tuple(choices))

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        names = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "text",
                 "list": "a list", "dict": "a mapping"}
        return " or ".join(names[k] for k in sorted(self.kinds) if k in names) or "anything"


@dataclass(frozen=True)
class KeySchema:
    """Every key a framework (at one version) reads from its config file."""

    framework: str
    source: str  # where the keys came from, e.g. "axolotl 0.19.0 (recorded from its wheel)", "transformers 5.23.0 (installed)"
    keys: Mapping[str, KeyType]
    on_unknown: str  # what the framework does with a key it does not know, for the CF001 message
    nested: Mapping[str, KeySchema] = field(default_factory=dict)  # e.g. axolotl ``datasets`` entries
    renamed: Mapping[str, str] = field(default_factory=dict)  # old key -> what became of it
    converts_text: bool = True  # the loader turns "3" into 3 where a number is needed (pydantic, argparse)
    # key -> (package, what changes between its versions, ``"fraction"`` when only values below 1 are affected)
    version_dependent: Mapping[str, tuple[str, str, str | None]] = field(default_factory=dict)
    # keys the framework refuses together when all of them are set true, with what it says
    conflicts: tuple[tuple[tuple[str, ...], str], ...] = ()

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def merged(self, other: KeySchema, source: str | None = None) -> KeySchema:
        return dataclasses.replace(self, keys={**other.keys, **self.keys}, source=source or self.source,
                                   nested={**other.nested, **self.nested}, renamed={**other.renamed, **self.renamed},
                                   version_dependent={**other.version_dependent, **self.version_dependent},
                                   conflicts=other.conflicts + self.conflicts)


def key_type(annotation: Any, text_becomes_enum: bool = False) -> KeyType:
    """The KeyType of a type annotation: a typing object, a class, or annotation text (``"float | None"``).

    ``text_becomes_enum``: the class converts ``SchedulerType | str`` text to the enum (TrainingArguments'
    ``__post_init__``), so only the enum's values pass; pydantic and plain dataclasses take any text.
    """
    if isinstance(annotation, str):
        try:
            node = ast.parse(annotation, mode="eval").body
        except SyntaxError:
            return KeyType()
        return _merge(_from_node(node), text_becomes_enum)
    return _merge(_from_object(annotation), text_becomes_enum)


def _merge(parts: list[KeyType], text_becomes_enum: bool) -> KeyType:
    if not parts or any(ANY in p.kinds and p.choices is None for p in parts):
        return KeyType()
    enums = [p for p in parts if p.choices is not None]
    if enums and all(p.choices is not None or (text_becomes_enum and p.kinds == {"str"}) for p in parts):
        choices = tuple(dict.fromkeys(c for p in enums for c in p.choices or ()))
        return KeyType(frozenset(k for p in enums for k in p.kinds), choices)
    kinds = frozenset(k for p in parts for k in p.kinds)
    if enums:  # a closed set next to open kinds: the open kinds decide
        kinds |= frozenset(k for p in enums for k in p.kinds)
    return KeyType(kinds)


def _from_object(tp: Any) -> list[KeyType]:
    if tp is type(None):
        return []
    if tp is typing.Any:
        return [KeyType()]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [KeyType(frozenset({"str"}), tuple(m.value for m in tp))]
    if isinstance(tp, type):
        return _from_name(tp.__name__)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return [_literal(args)]
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return [t for a in args for t in _from_object(a)]
    if origin is not None:
        return _from_object(origin)
    if isinstance(tp, str):
        return [key_type(tp)]
    return [KeyType()]


def _from_node(node: ast.expr) -> list[KeyType]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _from_node(node.left) + _from_node(node.right)
    if isinstance(node, ast.Constant):
        return [] if node.value is None else ([key_type(node.value)] if isinstance(node.value, str) else [KeyType()])
    if isinstance(node, ast.Subscript):
        name = _dotted(node.value)
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "Literal":
            try:
                return [_literal(tuple(ast.literal_eval(e) for e in inner))]
            except ValueError:
                return [KeyType()]
        if name in ("Optional", "Union"):
            return [t for e in inner for t in _from_node(e)]
        if name == "Annotated":  # constraints (a pattern, a range) that mldebug does not model
            return [KeyType()]
        return _from_name(name)
    return _from_name(_dotted(node))


def _from_name(name: str) -> list[KeyType]:
    name = name.rsplit(".", 1)[-1]
    if name in _NONE:
        return []
    if name in _SCALARS:
        return [KeyType(frozenset({_SCALARS[name]}))]
    if name in _LISTS:
        return [KeyType(frozenset({"list"}))]
    if name in _DICTS:
        return [KeyType(frozenset({"dict"}))]
    return [KeyType()]  # a model, an enum we cannot see, Any: anything passes


def _literal(values: tuple[Any, ...]) -> KeyType:
    values = tuple(v for v in values if v is not None)
    kinds = frozenset("bool" if isinstance(v, bool) else type(v).__name__ for v in values)
    return KeyType(kinds, values)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def dataclass_keys(classes: Iterable[type], text_becomes_enum: bool = False) -> dict[str, KeyType]:
    """The init fields of dataclasses (HfArgumentParser passes a config key to the class that has the field)."""
    hints: dict[str, KeyType] = {}
    for cls in classes:
        for f in dataclasses.fields(cls):
            if f.init and f.name not in hints:
                hints[f.name] = key_type(f.type, text_becomes_enum)
    return hints


def pydantic_keys(model: Any) -> dict[str, KeyType]:
    """A pydantic model's fields by the names a config may use (field name and alias)."""
    out: dict[str, KeyType] = {}
    for name, info in model.model_fields.items():
        kt = key_type(info.annotation)
        out[name] = kt
        if info.alias:
            out[info.alias] = kt
    return out


def recorded_keys(package: str, classes: Iterable[str], version: str | None) -> dict[str, KeyType]:
    """The keys of ``classes`` in the wheels' record (frameworks/record.py) at the release standing for ``version``;
    the first class naming a key wins."""
    out: dict[str, KeyType] = {}
    for cls in classes:
        for key, (_default, kinds, *choices) in record.fields(package, cls, version).items():
            out.setdefault(key, KeyType(frozenset(kinds.split("|")), tuple(choices[0]) if choices else None))
    return out


def stored(name: str) -> dict[str, Any]:
    """A table stored in ``frameworks/keys/`` (axolotl's chat templates: tools/axolotl_chat_templates.py)."""
    text = resources.files("mldebug_cli.frameworks").joinpath("keys").joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class ConfigReview:
    """What the CF checks look at: a config file, the framework's schema for it, and the target versions."""

    config: ConfigFile
    framework: str
    schema: KeySchema | None  # None: the framework's keys are not modelled (torchtune)
    targets: TargetVersions
    reported: frozenset[str] = frozenset()  # keys another check already reports (LR004)
    facts: TrainerFacts | None = None  # what the config makes the trainer do; None: not read for this framework
