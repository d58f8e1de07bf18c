"""The training frameworks' ``FRAMEWORK`` objects, loaded from their registry lines (``frameworks.lines``, re-exported
here): ``resolve`` is the one look-up of a ``--framework`` value a command makes; ``require`` checks a framework
detected from a config; ``load`` imports one line's folder on first use."""

from __future__ import annotations

import importlib

from mldebug_cli.core.errors import UsageError
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.lines import (  # the lines themselves, re-exported: callers ask the registry
    CAPABILITIES,
    DEFAULT_ROWS,
    DISTRIBUTIONS,
    EVERYTHING,
    FLAGS,
    NAMES,
    PREFLIGHT_NEEDS,
    REGISTRY,
    VERSION_LABELS,
    VERSION_PACKAGES,
    Capability,
    Entry,
    Flag,
    chosen,
    entry,
    names_for,
    serving,
    serving_line,
)

__all__ = ["CAPABILITIES", "DEFAULT_ROWS", "DISTRIBUTIONS", "EVERYTHING", "FLAGS", "NAMES", "PREFLIGHT_NEEDS",
           "REGISTRY", "VERSION_LABELS", "VERSION_PACKAGES", "Capability", "Entry", "Flag", "checked", "chosen",
           "entry", "framework", "frameworks", "load", "names_for", "names_with", "require", "resolve",
           "serving", "serving_line"]


def resolve(name: str, *capabilities: str) -> Framework:
    """The FRAMEWORK of ``name`` once it is known to serve ``capabilities`` (a UsageError naming those that do
    otherwise): the one look-up of a ``--framework`` value, at the command boundary."""
    return load(serving_line(name, entry(name), capabilities))


def checked(found: Framework, *capabilities: str) -> Framework:
    """``found`` (a framework a caller resolved) once it is known to serve ``capabilities``: asked of the object's
    own parts, so that a framework handed along is not looked up again (its line is read only to word the error)."""
    if all(getattr(found, CAPABILITIES[c].part) is not None for c in capabilities):
        return found
    return load(serving_line(found.name, entry(found.name), capabilities))


def require(line: Entry, *capabilities: str) -> Framework:
    """``line``'s FRAMEWORK (a framework detected from a config) once it is known to serve ``capabilities``."""
    return load(serving_line(line.name, line, capabilities))


def load(line: Entry) -> Framework:
    """The FRAMEWORK object of one registry line (its module is imported on first use)."""
    loaded: Framework = importlib.import_module(f"mldebug_cli.frameworks.{line.module}.framework").FRAMEWORK
    return loaded


def framework(name: str) -> Framework:
    """The FRAMEWORK object of ``name`` (its module is imported on first use)."""
    found = entry(name)
    if found is None:
        raise UsageError(f"--framework: unknown framework {name!r}", hint=f"one of {', '.join(NAMES)}")
    return load(found)


def frameworks() -> tuple[Framework, ...]:
    return tuple(load(line) for line in REGISTRY)


def names_with(part: str) -> tuple[str, ...]:
    """The frameworks that supply ``part`` (a Framework field), in registry order."""
    return tuple(f.name for f in frameworks() if getattr(f, part))
