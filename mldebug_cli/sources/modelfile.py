"""Read an Ollama Modelfile the way ollama/ollama parser/parser.go does.

Commands are case-insensitive; a value runs to the end of its line unless it opens with \"\"\" or ",
in which case it runs to the first line end where the trimmed text closes the quote. Values are
whitespace-trimmed outside the quotes, and non-printable characters other than whitespace are dropped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import open_regular

COMMANDS = (
    "from",
    "license",
    "template",
    "system",
    "adapter",
    "draft",
    "renderer",
    "parser",
    "parameter",
    "message",
    "requires",
)
MESSAGE_ROLES = ("system", "user", "assistant")
_MODEL_SUFFIXES = (".gguf", ".bin", ".safetensors", ".pth", ".pt")
_SEMVER = re.compile(r"v?\d+(\.\d+(\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)?)?")
_HINT = "Modelfile commands: FROM, TEMPLATE, SYSTEM, PARAMETER, MESSAGE, ADAPTER, LICENSE, RENDERER, PARSER"


@dataclass(frozen=True)
class ModelfileMessage:
    role: str
    content: str


@dataclass(frozen=True)
class Modelfile:
    """A parsed Modelfile. For TEMPLATE, SYSTEM, ADAPTER and the rest the last line wins, as in Ollama."""

    path: Path
    from_: str  # the FROM argument as written
    from_path: Path | None  # the local file or folder FROM names; None when FROM names a model
    template: str | None
    system: str | None
    parameters: tuple[tuple[str, str], ...]  # (name, value) in file order; repeated names (stop) kept
    adapter: Path | None
    messages: tuple[ModelfileMessage, ...]
    licenses: tuple[str, ...]
    renderer: str | None  # when set, Ollama renders prompts with this built-in renderer, not the template
    parser: str | None
    requires: str | None
    draft: Path | None

    @property
    def model_name(self) -> str | None:
        """The model FROM names (e.g. llama3:8b), when it names a model rather than a local path."""
        return None if self.from_path is not None else self.from_

    @property
    def stop(self) -> tuple[str, ...]:
        return self.parameter("stop")

    def parameter(self, name: str) -> tuple[str, ...]:
        """Every value given for a PARAMETER, in file order."""
        return tuple(value for key, value in self.parameters if key == name)


@dataclass(frozen=True)
class _Command:
    line: int
    name: str  # lowercased command, or the parameter's name for PARAMETER lines
    value: str
    role: str = ""  # MESSAGE only
    is_parameter: bool = False


def read_modelfile(path: Path) -> Modelfile:
    """Parse the Modelfile at `path`; FROM and ADAPTER paths resolve against its folder."""
    try:
        with open_regular(path) as stream:
            raw = stream.read(MAX_MODELFILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read Modelfile {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_MODELFILE_BYTES:
        raise InputError(f"{path}: the Modelfile is over {MAX_MODELFILE_BYTES // 2**20} MiB, more than mldebug reads "
                         "(real ones are a few KiB; a template is at most 1,000,000 characters)")
    return parse_modelfile(_decode(raw), Path(path))


MAX_MODELFILE_BYTES = 4 * 2**20


def parse_modelfile(text: str, path: Path) -> Modelfile:
    """Parse Modelfile text; `path` names it in errors and anchors relative paths."""
    commands = _Scanner(text, path).commands()
    return _build(commands, Path(path))


def _decode(raw: bytes) -> str:
    # Ollama decodes UTF-8 (or UTF-16 with a BOM) and replaces invalid bytes rather than failing.
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8-sig", errors="replace")


def _go_printable(ch: str) -> bool:
    return ch in " \t\r\n" or ch.isprintable()


def _unquote(text: str) -> str | None:
    """The value inside \"\"\"...\"\"\" or "...", the text itself when unquoted, None while a quote is open."""
    if text.startswith('"""'):
        return text[3:-3] if len(text) >= 6 and text.endswith('"""') else None
    if text.startswith('"'):
        return text[1:-1] if len(text) >= 2 and text.endswith('"') else None
    return text


class _Scanner:
    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.pos = 0
        self.line = 1

    def fail(self, line: int, message: str, hint: str | None = None) -> InputError:
        return InputError(f"{self.path}:{line}: {message}", hint=hint)

    def commands(self) -> list[_Command]:
        found = []
        while self.skip_blank_and_comments():
            found.append(self.command())
        return found

    def skip_blank_and_comments(self) -> bool:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch in " \t\r\n":
                self.line += ch == "\n"
                self.pos += 1
            else:
                return True
        return False

    def word(self, allowed: str) -> str:
        start = self.pos
        while self.pos < len(self.text) and (re.fullmatch(allowed, self.text[self.pos])):
            self.pos += 1
        return self.text[start : self.pos]

    def at_separator(self) -> bool:
        return self.pos < len(self.text) and self.text[self.pos] in " \t"

    def command(self) -> _Command:
        line = self.line
        first = self.text[self.pos]
        self.pos += 1
        keyword = first + self.word(r"[A-Za-z]")
        if keyword.lower() not in COMMANDS:
            raise self.fail(line, f"unknown command {keyword!r}", hint=_HINT)
        if not self.at_separator():
            raise self.fail(line, f"{keyword.upper()} needs a value")
        self.pos += 1
        name, role, is_parameter = keyword.lower(), "", False
        if name == "parameter":
            name, is_parameter = self.word(r"[A-Za-z0-9_]"), True
            if not name or not self.at_separator():
                raise self.fail(line, 'PARAMETER needs a name and a value, e.g. PARAMETER stop "<|im_end|>"')
            self.pos += 1
        elif name == "message":
            role = self.word(r"[A-Za-z]")
            if role not in MESSAGE_ROLES:
                raise self.fail(line, f"MESSAGE role must be one of {', '.join(MESSAGE_ROLES)}, not {role!r}")
            if not self.at_separator():
                raise self.fail(line, "MESSAGE needs a role and a value")
            self.pos += 1
        return _Command(line, name, self.value(line), role, is_parameter)

    def value(self, line: int) -> str:
        start = self.pos
        while True:
            end = self.text.find("\n", self.pos)
            stop = len(self.text) if end < 0 else end
            candidate = "".join(ch for ch in self.text[start:stop] if _go_printable(ch)).strip()
            value = _unquote(candidate)
            if value is not None:
                self.pos = stop
                return value
            if end < 0:
                raise self.fail(line, 'unterminated quoted value: no closing """ or " before the end of the file')
            self.pos = end + 1
            self.line += 1


def _expand(argument: str, folder: Path) -> Path:
    """Ollama's expandPath: absolute, ~ (home) or relative to the Modelfile's folder."""
    if argument.startswith(("/", "\\")) or os.path.isabs(argument):
        target = Path(argument)
    elif argument.startswith("~"):
        target = Path(os.path.expanduser(argument))
    else:
        target = folder / argument
    return Path(os.path.abspath(target))


def _looks_like_path(argument: str) -> bool:
    if argument in (".", "..") or argument.startswith(("/", "\\", "./", "../", ".\\", "..\\", "~")):
        return True
    return bool(re.match(r"[A-Za-z]:[\\/]", argument)) or argument.lower().endswith(_MODEL_SUFFIXES)


def _local_file(command: _Command, folder: Path, path: Path) -> Path:
    target = _expand(command.value, folder)
    if not target.exists():
        raise InputError(
            f"{path}:{command.line}: {command.name.upper()} {command.value}: no such file or folder ({target})"
        )
    return target


def _build(commands: list[_Command], path: Path) -> Modelfile:
    folder = path.parent
    last: dict[str, _Command] = {}
    for command in commands:
        if not command.is_parameter:
            last[command.name] = command
    model = last.get("from")
    if model is None:
        raise InputError(f"{path}: no FROM line", hint="a Modelfile starts with FROM <model name or path>")
    requires = last.get("requires")
    if requires is not None and not _SEMVER.fullmatch(requires.value):
        raise InputError(f"{path}:{requires.line}: REQUIRES must be a version like 0.14.0, not {requires.value!r}")
    adapter, draft = last.get("adapter"), last.get("draft")

    def text_of(name: str) -> str | None:
        return last[name].value if name in last else None

    return Modelfile(
        path=path,
        from_=model.value,
        from_path=_from_path(model, folder, path),
        template=text_of("template"),
        system=text_of("system"),
        parameters=tuple((c.name, c.value) for c in commands if c.is_parameter),
        adapter=_local_file(adapter, folder, path) if adapter else None,
        messages=tuple(ModelfileMessage(c.role, c.value) for c in commands if c.name == "message"),
        licenses=tuple(c.value for c in commands if c.name == "license"),
        renderer=text_of("renderer"),
        parser=text_of("parser"),
        requires=text_of("requires"),
        draft=_local_file(draft, folder, path) if draft else None,
    )


def _from_path(model: _Command, folder: Path, path: Path) -> Path | None:
    """Like Ollama: an existing local path is a path, anything else a model name, but a missing path is an error."""
    target = _expand(model.value, folder)
    try:
        exists = target.exists()
    except OSError:  # a name no file system accepts (too long, ...) cannot be a path
        exists = False
    if exists:
        return target
    if _looks_like_path(model.value):
        raise InputError(
            f"{path}:{model.line}: FROM {model.value}: no such file or folder ({target})",
            hint="FROM takes a model name (e.g. llama3:8b) or a GGUF / safetensors path relative to the Modelfile",
        )
    return None
