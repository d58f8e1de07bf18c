"""A run's config file: its values, and the line of every key so findings can point at it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import long_number_message, read_text

YAML_SUFFIXES = (".yaml", ".yml")
_MISSING = object()


@dataclass(frozen=True)
class ConfigFile:
    """Parsed config data plus ``lines``: dotted key path -> 1-based line of the key."""

    path: str
    data: Mapping[str, Any]
    lines: Mapping[str, int] = field(default_factory=dict)

    def has(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def get(self, key: str, default: Any = None) -> Any:
        """The value at a dotted key path (``lr_scheduler.num_warmup_steps``, ``datasets.0.path``), or ``default``."""
        node: Any = self.data
        for part in key.split("."):
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                return default
        return node

    def line(self, key: str | None) -> int | None:
        return None if key is None else self.lines.get(key)


MAX_CONFIG_BYTES = 16 * 2**20  # a training config (with an inline chat template or DeepSpeed block) is KiBs
MAX_CONFIG_KEYS = 100_000  # counted as colons before parsing, so a template's colons count too: still far above


def load_config(path: str | Path) -> ConfigFile:
    """Read a JSON or YAML config; raise InputError naming the file and what is wrong."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # not there, a loop, ...: read_text below says which
    if size > MAX_CONFIG_BYTES:
        raise InputError(f"{path}: the config is {size:,} bytes, over the {MAX_CONFIG_BYTES:,} mldebug reads",
                         hint="a training config is a few KiB; check that this is the right file")
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the config file ({exc})") from None
    if len(text) > MAX_CONFIG_BYTES:  # grew between the two looks
        raise InputError(f"{path}: the config is over the {MAX_CONFIG_BYTES:,} bytes mldebug reads")
    if text.count(":") > MAX_CONFIG_KEYS:  # every key has its colon: PyYAML takes minutes on 300,000 keys
        raise InputError(f"{path}: the config has over {MAX_CONFIG_KEYS:,} keys, more than mldebug reads",
                         hint="a training config has tens to hundreds of keys; check that this is the right file")
    try:
        data = _parse(path, text)
        lines = _key_lines(text)
    except RecursionError:
        raise InputError(f"{path}: the config is nested too deeply to read") from None
    except ValueError as exc:  # an integer over Python's digit limit (the parsers' own errors are handled below)
        raise InputError(f"{path}: {long_number_message(text, exc)}") from None
    if not isinstance(data, Mapping):
        raise InputError(
            f"{path}: the config must be a mapping of keys to values, found {type(data).__name__}",
            hint="pass a TrainingArguments/SFTConfig JSON or YAML, or an axolotl, LLaMA-Factory or torchtune YAML",
        )
    return ConfigFile(path=str(path), data=data, lines=lines)


def _parse(path: Path, text: str) -> Any:
    import yaml

    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise InputError(f"{path}: {where}invalid YAML ({getattr(exc, 'problem', None) or exc})") from None


def _key_lines(text: str) -> dict[str, int]:
    """Dotted key path -> line, from the YAML node tree (JSON is read as YAML flow style)."""
    import yaml

    try:
        root = yaml.compose(text)
    except yaml.YAMLError:  # valid JSON that PyYAML cannot compose: findings just carry no line
        return {}
    lines: dict[str, int] = {}
    _walk(root, "", lines, set())
    return lines


def _walk(node: Any, prefix: str, lines: dict[str, int], seen: set[int]) -> None:
    """Each node once: a YAML alias repeats a node, and aliases of aliases multiply paths exponentially."""
    import yaml

    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault(f"{prefix}{index}", item.start_mark.line + 1)
            _walk(item, f"{prefix}{index}.", lines, seen)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        path = f"{prefix}{key_node.value}"
        lines.setdefault(path, key_node.start_mark.line + 1)
        _walk(value_node, f"{path}.", lines, seen)
