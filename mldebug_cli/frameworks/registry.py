"""The training frameworks, one line each: the only place that lists them (sqlfluff's dialect registry).

Each line names a module of this package that exports one ``FRAMEWORK`` (a :class:`framework.Framework`): everything mldebug
knows about the framework (how its configs are recognised and read, its key schema, how it turns rows into ids and
labels, how it counts steps). A line also carries the few facts the command line needs before any framework module
is imported (``mldebug --help`` imports none of them): its package, and whether a ``--<package>-version`` flag and
an ``mldebug.toml [versions]`` key name it. Every table of frameworks is generated from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from mldebug_cli.core.errors import UsageError

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework


class Entry(NamedTuple):
    """One registry line."""

    name: str  # the --framework value, and how reports name it
    module: str  # mldebug_cli.frameworks.<module> exports FRAMEWORK
    package: str | None = None  # its PyPI distribution (None: not versioned)
    version_flag: bool = False  # the package's version can be given (--<package>-version, mldebug.toml [versions])
    label: str = ""  # how help text names it (default: its name)


REGISTRY = (
    Entry("transformers", "hf", "transformers", version_flag=True),
    Entry("trl", "trl", "trl", version_flag=True, label="TRL"),
    Entry("axolotl", "axolotl", "axolotl", version_flag=True),
    Entry("llama-factory", "llama_factory", "llamafactory", version_flag=True, label="LLaMA-Factory"),
    Entry("torchtune", "torchtune", "torchtune"),
    Entry("unsloth", "unsloth", label="Unsloth"),
)
DEFAULT_ROWS = "trl"  # whose tokenization inspect-data emulates when no framework is named

NAMES = tuple(entry.name for entry in REGISTRY)
VERSION_PACKAGES = tuple(entry.package for entry in REGISTRY if entry.version_flag)  # the --<package>-version flags
VERSION_LABELS = {entry.package: entry.label or entry.name for entry in REGISTRY if entry.version_flag}
DISTRIBUTIONS = {entry.name: entry.package for entry in REGISTRY if entry.package}  # framework name -> distribution


def entry(name: str) -> Entry | None:
    return next((e for e in REGISTRY if e.name == name), None)


def framework(name: str) -> Framework:
    """The FRAMEWORK object of ``name`` (its module is imported on first use)."""
    found = entry(name)
    if found is None:
        raise UsageError(f"--framework: unknown framework {name!r}", hint=f"one of {', '.join(NAMES)}")
    return importlib.import_module(f"mldebug_cli.frameworks.{found.module}").FRAMEWORK


def borrowed(name: str, part: str) -> Callable[..., Any]:
    """``name``'s ``part``, looked up when called: a framework that does something exactly as another one does."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(framework(name), part)(*args, **kwargs)

    return call


def lazily(module: str, name: str) -> Callable[..., Any]:
    """``module``'s ``name``, imported when called (a part whose module imports the framework modules itself)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


def frameworks() -> tuple[Framework, ...]:
    return tuple(framework(name) for name in NAMES)


def names_with(part: str) -> tuple[str, ...]:
    """The frameworks that supply ``part`` (a Framework field), in registry order."""
    return tuple(f.name for f in frameworks() if getattr(f, part))
