"""The training frameworks, one line each: the only place that lists them (sqlfluff's dialect registry).

Each line names a folder of this package (one per framework) whose ``framework`` module exports one ``FRAMEWORK``
(a :class:`framework.Framework`): everything mldebug knows about the framework (how its configs are recognised and
read, its key schema, how it turns rows into ids and labels, how it counts steps). A line also carries the few facts the command line needs before any framework module
is imported (``mldebug --help`` imports none of them): its package, whether a ``--<package>-version`` flag and
an ``mldebug.toml [versions]`` key name it, what it serves (which commands' ``--framework`` take it; a test holds
each line to its FRAMEWORK's parts), and the command-line flags of its own (``Flag``; its FRAMEWORK reads their
values). Nothing here imports a framework module (``registry`` loads them). Every table of frameworks, every ``--framework`` help text and choice, and every framework's own flag, is
generated from here.
"""

from __future__ import annotations

from typing import NamedTuple

from mldebug_cli.core.errors import UsageError


class Capability(NamedTuple):
    part: str  # the Framework part that supplies it
    what: str  # what mldebug reads of a framework that has it


CAPABILITIES = {  # what a command needs of a framework
    "rows": Capability("row_profile", "how its trainer prepares rows"),  # inspect-data
    "plan": Capability("read_plan", "the data settings of its configs"),  # preflight
    "schedule": Capability("read_spec", "its schedule"),  # lr-plot
    "trainer": Capability("trainer_facts", "its trainer settings"),  # memory, probe
}
EVERYTHING = tuple(CAPABILITIES)
PREFLIGHT_NEEDS = ("plan", "schedule")  # preflight reads a config's data settings and its schedule


class Flag(NamedTuple):
    """An inspect-data option of one framework's own (its row settings); ``Framework.read_flags`` reads its value."""

    option: str  # e.g. --response-part
    help: str

    @property
    def parameter(self) -> str:  # the command function's parameter
        return self.option.lstrip("-").replace("-", "_")


class Entry(NamedTuple):
    """One registry line."""

    name: str  # the --framework value, and how reports name it
    module: str  # its folder: mldebug_cli.frameworks.<module>.framework exports FRAMEWORK
    package: str | None = None  # its PyPI distribution (None: not versioned)
    version_flag: bool = False  # the package's version can be given (--<package>-version, mldebug.toml [versions])
    label: str = ""  # how help text names it (default: its name)
    serves: tuple[str, ...] = ()  # the CAPABILITIES its FRAMEWORK has
    flags: tuple[Flag, ...] = ()  # inspect-data options of its own

    @property
    def shown(self) -> str:
        return self.label or self.name


REGISTRY = (
    Entry("transformers", "hf", "transformers", version_flag=True, serves=EVERYTHING),
    Entry("trl", "trl", "trl", version_flag=True, label="TRL", serves=EVERYTHING),
    Entry("axolotl", "axolotl", "axolotl", version_flag=True, serves=EVERYTHING),
    Entry("llama-factory", "llama_factory", "llamafactory", version_flag=True, label="LLaMA-Factory", serves=EVERYTHING),
    Entry("torchtune", "torchtune", "torchtune", serves=("rows", "schedule"), flags=(
        Flag("--torchtune-tokenizer", "torchtune's tokenizer builder (its tokenizer._component_); mldebug emulates "
                                      "torchtune.models.qwen2_5.qwen2_5_tokenizer (qwen2_5) only, the default."),
        Flag("--torchtune-dataset", "torchtune's SFT builder: chat (chat_dataset: messages rows as openai, sharegpt "
                                    "as sharegpt), instruct (instruct_dataset: input/output columns) or alpaca "
                                    "(alpaca_dataset) (default: from the row format)."),
        Flag("--torchtune-system-prompt", "torchtune chat_dataset/instruct_dataset new_system_prompt."),
        Flag("--torchtune-column", "torchtune chat_dataset's conversation_column (default: messages for messages rows, "
                                   "conversations for sharegpt rows)."),
    )),
    Entry("unsloth", "unsloth", label="Unsloth", serves=("rows", "plan"), flags=(
        Flag("--instruction-part", "Unsloth train_on_responses_only's instruction_part, e.g. '<|im_start|>user\\n' "
                                   "(\\n and \\t are read as escapes)."),
        Flag("--response-part", "Unsloth train_on_responses_only's response_part, e.g. '<|im_start|>assistant\\n'."),
        Flag("--unsloth-template", "Unsloth's get_chat_template name, e.g. llama-3.1: the tokenizer as the installed "
                                   "unsloth leaves it."),
    )),
)
DEFAULT_ROWS = "trl"  # whose tokenization inspect-data emulates when no framework is named

NAMES = tuple(entry.name for entry in REGISTRY)
VERSION_PACKAGES = tuple(entry.package for entry in REGISTRY if entry.version_flag and entry.package)  # the --<package>-version flags
VERSION_LABELS = {entry.package: entry.shown for entry in REGISTRY if entry.version_flag}
DISTRIBUTIONS = {entry.name: entry.package for entry in REGISTRY if entry.package}  # framework name -> distribution


FLAGS = {flag.option: entry for entry in REGISTRY for flag in entry.flags}  # a framework's own flag -> its line


def entry(name: str) -> Entry | None:
    return next((e for e in REGISTRY if e.name == name), None)


def serving(*capabilities: str) -> tuple[Entry, ...]:
    """The lines of the frameworks that serve every one of ``capabilities`` (CAPABILITIES keys), in registry order."""
    unknown = set(capabilities) - set(CAPABILITIES)
    if unknown:
        raise KeyError(unknown)
    return tuple(e for e in REGISTRY if set(capabilities) <= set(e.serves))


def names_for(*capabilities: str) -> tuple[str, ...]:
    """The ``--framework`` values a command that needs ``capabilities`` takes."""
    return tuple(e.name for e in serving(*capabilities))


def chosen(name: str, *capabilities: str) -> str:
    """``name`` when it names a framework that serves ``capabilities``; else a UsageError naming those that do."""
    return serving_line(name, entry(name), capabilities).name


def serving_line(name: str, found: Entry | None, capabilities: tuple[str, ...]) -> Entry:
    missing = [c for c in capabilities if c not in (found.serves if found else ())]
    if found is not None and not missing:
        return found
    hint = f"choose one of {', '.join(names_for(*capabilities))}"
    if found is None:
        raise UsageError(f"--framework: unknown framework {name!r}", hint=hint)
    raise UsageError(f"--framework {name}: mldebug does not read {CAPABILITIES[missing[0]].what}", hint=hint)
