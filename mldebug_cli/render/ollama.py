"""Ollama's prompt construction: what its server does with a chat request around its Go template.

Reproduces ollama/ollama server/routes.go (Modelfile SYSTEM and MESSAGE handling), server/prompt.go
(image tags), template/template.go (Parse, Execute with its .Messages and legacy .Prompt/.Response paths,
collate, the template funcs, Named for import-time family detection) and the api types templates see.
Ollama's family templates are not shipped with mldebug: import-time detection reads them from a folder the
user points at (``MLDEBUG_OLLAMA_TEMPLATES``: the ``template/`` folder of an Ollama source tree).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any, ClassVar

from mldebug_cli.core.errors import InputError
from mldebug_cli.render.gotemplate import (
    DEFAULT_LIMITS,
    ActionNode,
    CommandNode,
    FieldNode,
    GoStruct,
    IfNode,
    Limits,
    ListNode,
    PipeNode,
    RangeNode,
    Template,
    TemplateExecError,
    TemplateFunc,
    TemplateFuncError,
    TemplateLimitError,
    WithNode,
    go_json,
    identifiers,
    json_tag,
    parse,
)

DEFAULT_TEMPLATE = "{{ .Prompt }}"  # what Ollama uses when a model has no template
DETECTION_THRESHOLD = 100  # template.Named accepts the closest family only below this edit distance
THINK_LEVELS = ("high", "medium", "low")
TEMPLATE_FUNC_NAMES = ("json", "currentDate", "yesterdayDate", "toTypeScriptType")


# --------------------------------------------------------------------- the api types templates see


def marshalled(value: Any) -> str:
    """``bts, _ := json.Marshal(v); return string(bts)``: Ollama's String() methods and its json func drop
    Marshal's error (NaN, infinities), so the text is empty then."""
    try:
        return go_json(value)
    except TemplateFuncError:
        return ""


class Arguments(dict):
    """api.ToolCallFunctionArguments: a map whose String() is its JSON (keys sorted, as Go maps marshal)."""

    go_type = "api.ToolCallFunctionArguments"

    def go_string(self) -> str:
        return marshalled(dict(self))


class PropertyType(tuple):
    """api.PropertyType: JSON Schema "type" as one name or several."""

    go_type = "api.PropertyType"

    def go_string(self) -> str:
        if len(self) <= 1:
            return self[0] if self else ""
        return "[" + " ".join(self) + "]"

    def go_marshal_json(self) -> Any:
        return self[0] if len(self) == 1 else list(self)


class Tools(tuple):
    """api.Tools: its String() is its JSON; no tools marshal as null."""

    go_type = "api.Tools"

    def go_string(self) -> str:
        return marshalled(self)

    def go_marshal_json(self) -> Any:
        return list(self) if self else None


_TS_TYPES = {
    "string": "string",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "array": "any[]",
    "object": "Record<string, any>",
    "null": "null",
}


@dataclass(frozen=True)
class ToolProperty(GoStruct):
    go_type: ClassVar[str] = "api.ToolProperty"

    AnyOf: tuple[ToolProperty, ...] = field(default=(), metadata=json_tag("anyOf", omitempty=True))
    Type: PropertyType = field(default=PropertyType(), metadata=json_tag("type", omitempty=True))
    Items: Any = field(default=None, metadata=json_tag("items", omitempty=True))
    Description: str = field(default="", metadata=json_tag("description", omitempty=True))
    Enum: tuple[Any, ...] = field(default=(), metadata=json_tag("enum", omitempty=True))
    Properties: Mapping[str, ToolProperty] | None = field(default=None, metadata=json_tag("properties", True))

    def typescript_type(self) -> str:
        """ToolProperty.ToTypeScriptType: anyOf and multi-type unions joined by " | "."""
        if self.AnyOf:
            return " | ".join(p.typescript_type() for p in self.AnyOf)
        if not self.Type:
            return "any"
        return " | ".join(_TS_TYPES.get(t, "any") for t in self.Type)

    go_methods: ClassVar[Mapping[str, Any]] = {"ToTypeScriptType": lambda self: self.typescript_type()}


@dataclass(frozen=True)
class ToolFunctionParameters(GoStruct):
    go_type: ClassVar[str] = "api.ToolFunctionParameters"

    Type: str = field(default="", metadata=json_tag("type"))
    Defs: Any = field(default=None, metadata=json_tag("$defs", omitempty=True))
    Items: Any = field(default=None, metadata=json_tag("items", omitempty=True))
    Required: tuple[str, ...] = field(default=(), metadata=json_tag("required", omitempty=True))
    Properties: Mapping[str, ToolProperty] | None = field(default=None, metadata=json_tag("properties"))

    def go_string(self) -> str:
        return marshalled(self)


@dataclass(frozen=True)
class ToolFunction(GoStruct):
    go_type: ClassVar[str] = "api.ToolFunction"

    Name: str = field(default="", metadata=json_tag("name"))
    Description: str = field(default="", metadata=json_tag("description", omitempty=True))
    Parameters: ToolFunctionParameters = field(default=ToolFunctionParameters(), metadata=json_tag("parameters"))

    def go_string(self) -> str:
        return marshalled(self)


@dataclass(frozen=True)
class Tool(GoStruct):
    go_type: ClassVar[str] = "api.Tool"

    Type: str = field(default="", metadata=json_tag("type"))
    Items: Any = field(default=None, metadata=json_tag("items", omitempty=True))
    Function: ToolFunction = field(default=ToolFunction(), metadata=json_tag("function"))

    def go_string(self) -> str:
        return marshalled(self)


@dataclass(frozen=True)
class ToolCallFunction(GoStruct):
    go_type: ClassVar[str] = "api.ToolCallFunction"

    Index: int = field(default=0, metadata=json_tag("index"))
    Name: str = field(default="", metadata=json_tag("name"))
    Arguments: Arguments = field(default_factory=Arguments, metadata=json_tag("arguments"))


@dataclass(frozen=True)
class ToolCall(GoStruct):
    go_type: ClassVar[str] = "api.ToolCall"

    ID: str = field(default="", metadata=json_tag("id", omitempty=True))
    Function: ToolCallFunction = field(default=ToolCallFunction(), metadata=json_tag("function"))


@dataclass(frozen=True)
class Message(GoStruct):
    """api.Message, as templates see it through .Messages (a slice of pointers)."""

    go_type: ClassVar[str] = "*api.Message"
    go_pointer: ClassVar[bool] = True

    Role: str = field(default="", metadata=json_tag("role"))
    Content: str = field(default="", metadata=json_tag("content"))
    Thinking: str = field(default="", metadata=json_tag("thinking", omitempty=True))
    Images: tuple[Any, ...] = field(default=(), metadata=json_tag("images", omitempty=True))
    ToolCalls: tuple[ToolCall, ...] = field(default=(), metadata=json_tag("tool_calls", omitempty=True))
    ToolName: str = field(default="", metadata=json_tag("tool_name", omitempty=True))
    ToolCallID: str = field(default="", metadata=json_tag("tool_call_id", omitempty=True))


# ------------------------------------------------------------------- request data -> api types


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string, not {type(value).__name__}")
    return value


def _json_any(value: Any, where: str) -> Any:
    """A JSON value as Go decodes it into `any`: every number becomes a float64."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _json_any(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_any(v, where) for v in value]
    raise InputError(f"{where} holds {type(value).__name__}, which is not JSON data")


def _content(value: Any, where: str) -> str:
    """Message content: a string, or OpenAI-style parts whose text parts Ollama's collate joins with blank lines."""
    if isinstance(value, (list, tuple)):
        texts = [p.get("text", "") for p in value if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n\n".join(_text(t, where) for t in texts)
    return _text(value, where)


def _tool_call(data: Any, where: str) -> ToolCall:
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be an object")
    function = data.get("function") or {}
    if not isinstance(function, Mapping):
        raise InputError(f"{where}.function must be an object")
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):  # OpenAI-style JSON text
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}.function.arguments is not valid JSON: {exc.msg}") from None
        except (ValueError, RecursionError):  # a number over Python's digit limit, nesting past its recursion limit
            raise InputError(f"{where}.function.arguments: mldebug cannot read it as JSON (a number too long or "
                             "nesting too deep)") from None
    if not isinstance(arguments, Mapping):
        raise InputError(f"{where}.function.arguments must be an object")
    index = function.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise InputError(f"{where}.function.index must be an integer")
    return ToolCall(
        ID=_text(data.get("id"), f"{where}.id"),
        Function=ToolCallFunction(
            Index=index,
            Name=_text(function.get("name"), f"{where}.function.name"),
            Arguments=Arguments(_json_any(arguments, f"{where}.function.arguments")),
        ),
    )


def message_from_dict(data: Mapping[str, Any], where: str) -> Message:
    """An api.Message from a chat message dict (role, content, thinking, tool_calls, tool_name, ...)."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be an object with a role and content")
    calls = data.get("tool_calls") or ()
    if not isinstance(calls, (list, tuple)):
        raise InputError(f"{where}.tool_calls must be a list")
    images = data.get("images") or ()
    if not isinstance(images, (list, tuple)):
        raise InputError(f"{where}.images must be a list")
    return Message(
        Role=_text(data.get("role"), f"{where}.role").lower(),  # api.Message unmarshals roles lowercased
        Content=_content(data.get("content"), f"{where}.content"),
        Thinking=_text(data.get("thinking"), f"{where}.thinking"),
        Images=tuple(images),
        ToolCalls=tuple(_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)),
        ToolName=_text(data.get("tool_name"), f"{where}.tool_name"),
        ToolCallID=_text(data.get("tool_call_id"), f"{where}.tool_call_id"),
    )


def _property(data: Any, where: str) -> ToolProperty:
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be an object")
    kind = data.get("type")
    if kind is not None and not isinstance(kind, (str, list, tuple)):
        raise InputError(f"{where}.type must be a string or a list of strings")
    names = (kind,) if isinstance(kind, str) else tuple(kind or ())
    enum = data.get("enum") or ()
    return ToolProperty(
        AnyOf=tuple(_property(p, f"{where}.anyOf[{i}]") for i, p in enumerate(data.get("anyOf") or ())),
        Type=PropertyType(_text(n, f"{where}.type") for n in names),
        Items=_json_any(data.get("items"), f"{where}.items"),
        Description=_text(data.get("description"), f"{where}.description"),
        Enum=tuple(_json_any(list(enum), f"{where}.enum")),
        Properties=_properties(data.get("properties"), f"{where}.properties"),
    )


def _properties(data: Any, where: str) -> dict[str, ToolProperty] | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be an object")
    return {str(name): _property(value, f"{where}.{name}") for name, value in data.items()}


def tool_from_dict(data: Mapping[str, Any], where: str) -> Tool:
    """An api.Tool from an OpenAI-style tool dict ({"type": "function", "function": {...}})."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be an object")
    function = data.get("function") or {}
    parameters = function.get("parameters") or {} if isinstance(function, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(parameters, Mapping):
        raise InputError(f"{where}.function and its parameters must be objects")
    required = parameters.get("required") or ()
    return Tool(
        Type=_text(data.get("type"), f"{where}.type"),
        Items=_json_any(data.get("items"), f"{where}.items"),
        Function=ToolFunction(
            Name=_text(function.get("name"), f"{where}.function.name"),
            Description=_text(function.get("description"), f"{where}.function.description"),
            Parameters=ToolFunctionParameters(
                Type=_text(parameters.get("type"), f"{where}.function.parameters.type"),
                Defs=_json_any(parameters.get("$defs"), f"{where}.function.parameters.$defs"),
                Items=_json_any(parameters.get("items"), f"{where}.function.parameters.items"),
                Required=tuple(_text(r, f"{where}.function.parameters.required") for r in required),
                Properties=_properties(parameters.get("properties"), f"{where}.function.parameters.properties"),
            ),
        ),
    )


# ----------------------------------------------------------------------------- template funcs


def _json_func(value: Any) -> str:
    return marshalled(value)


def template_funcs(today: date) -> dict[str, TemplateFunc]:
    """The funcs Ollama registers for templates; the date helpers ignore their (format) arguments."""
    return {
        "json": TemplateFunc(_json_func),
        "currentDate": TemplateFunc(lambda *_: today.isoformat(), (), variadic=True, variadic_type="string"),
        "yesterdayDate": TemplateFunc(
            lambda *_: (today - timedelta(days=1)).isoformat(), (), variadic=True, variadic_type="string"
        ),
        "toTypeScriptType": TemplateFunc(lambda v: v.typescript_type() if isinstance(v, ToolProperty) else "any"),
    }


# ------------------------------------------------------------------------------ Parse / Execute


@dataclass(frozen=True)
class OllamaTemplate:
    """A template parsed as Ollama parses it, with the identifiers its Vars() reports (lowercased)."""

    source: str
    tree: Template
    variables: frozenset[str]

    @property
    def uses_messages(self) -> bool:
        """Whether Execute takes the .Messages path rather than the legacy .Prompt/.Response one."""
        return "messages" in self.variables or "document" in self.variables


def _response_action(pos: int) -> ActionNode:
    field_node = FieldNode(pos, ("Response",))
    return ActionNode(pos, PipeNode(pos, (), False, (CommandNode(pos, (field_node,)),)))


def parse_template(source: str) -> OllamaTemplate:
    """template.Parse: a template naming neither .Messages nor .Response gets {{ .Response }} appended."""
    tree = parse(source, TEMPLATE_FUNC_NAMES)
    variables = frozenset(name.lower() for name in identifiers(tree))
    if "messages" not in variables and "response" not in variables:
        tree = tree.with_root(ListNode(tree.root.pos, (*tree.root.nodes, _response_action(len(source)))))
    return OllamaTemplate(source, tree, variables)


def collate(messages: Sequence[Message]) -> tuple[str, list[Message]]:
    """All system contents joined by blank lines, and the messages with consecutive same-role ones merged.

    Tool messages are never merged; a merge keeps only the first message's other fields.
    """
    system = "\n\n".join(m.Content for m in messages if m.Role == "system")
    collated: list[Message] = []
    for message in messages:
        if collated and collated[-1].Role == message.Role and message.Role != "tool":
            collated[-1] = replace(collated[-1], Content=collated[-1].Content + "\n\n" + message.Content)
        else:
            collated.append(message)
    return system, collated


def _think_values(think: bool | str | None) -> dict[str, Any]:
    if think is not None and not isinstance(think, bool) and think not in THINK_LEVELS:
        raise InputError(f"think must be true, false or one of {', '.join(THINK_LEVELS)}, not {think!r}")
    level = think if isinstance(think, str) else ("medium" if think else "")
    return {"Think": bool(think), "ThinkLevel": level, "IsThinkSet": think is not None}


def _cut_after_response(root: ListNode) -> ListNode:
    """Ollama's deleteNode: drop every node after the first .Response field, keeping that one."""
    cut = False

    def matches(node: Any) -> bool:
        nonlocal cut
        if isinstance(node, FieldNode) and "Response" in node.idents:
            cut = True
            return False
        return cut

    def walk(node: Any) -> Any:
        if matches(node):
            return None
        if isinstance(node, ListNode):
            return ListNode(node.pos, tuple(n for n in (walk(c) for c in node.nodes) if n is not None))
        if isinstance(node, (IfNode, RangeNode, WithNode)):
            body = walk(node.list)
            else_list = walk(node.else_list) if node.else_list is not None else None
            if node.else_list is not None and else_list is None:
                raise TemplateExecError(
                    "Ollama cannot render this legacy template: {{ .Response }} sits in a branch that has an "
                    "{{else}} (its server panics cutting the template after .Response)"
                )
            return replace(node, list=body, else_list=else_list)
        if isinstance(node, ActionNode):
            pipe = walk(node.pipe)
            return None if pipe is None else replace(node, pipe=pipe)
        if isinstance(node, PipeNode):
            cmds = []
            for cmd in node.cmds:
                args = tuple(a for a in (walk(arg) for arg in cmd.args) if a is not None)
                if not args:
                    return None
                cmds.append(replace(cmd, args=args))
            return replace(node, cmds=tuple(cmds)) if cmds else None
        return node

    return walk(root)


def execute(
    template: OllamaTemplate,
    messages: Sequence[Message],
    tools: Sequence[Tool] = (),
    think: bool | str | None = None,
    today: date | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> str:
    """template.Execute with Values{Messages, Tools, Think}: the .Messages path or the legacy per-turn path."""
    system, collated = collate(messages)
    funcs = template_funcs(today or date.today())
    think_values = _think_values(think)
    if template.uses_messages:
        data = {
            "System": system,
            "Messages": collated,
            "Tools": Tools(tools),
            "Response": "",
            "Query": "",
            "Document": "",
            "Instruction": "",
            **think_values,
        }
        return template.tree.execute(data, funcs, limits)
    return _execute_legacy(template, collated, think_values, funcs, limits)


def _execute_legacy(
    template: OllamaTemplate,
    collated: Sequence[Message],
    think_values: dict[str, Any],
    funcs: dict[str, TemplateFunc],
    limits: Limits,
) -> str:
    """One execution per completed turn, then the template cut after .Response for the open turn.

    A trailing assistant message fills .Response of that last, cut execution: a prefill.
    """
    parts: list[str] = []
    turn = {"System": "", "Prompt": "", "Response": ""}

    def run(tree: Template, run_funcs: dict[str, TemplateFunc]) -> None:
        parts.append(tree.execute({**turn, **think_values}, run_funcs, limits))
        if sum(map(len, parts)) > limits.max_output_chars:
            raise TemplateLimitError(f"template output exceeded {limits.max_output_chars:,} characters")
        turn.update(System="", Prompt="", Response="")

    for message in collated:
        if message.Role == "system":
            if turn["Prompt"] or turn["Response"]:
                run(template.tree, funcs)
            turn["System"] = message.Content
        elif message.Role == "user":
            if turn["Response"]:
                run(template.tree, funcs)
            turn["Prompt"] = message.Content
        elif message.Role == "assistant":
            turn["Response"] = message.Content
    # Ollama executes the cut tree as a new template without its funcs: only the builtins exist there.
    run(template.tree.with_root(_cut_after_response(template.tree.root)), {})
    return "".join(parts)


def _with_image_tags(messages: Sequence[Message]) -> list[Message]:
    """chatPrompt: each image becomes [img-N], replacing a literal [img] or else prefixed to the content."""
    tagged: list[Message] = []
    count = 0
    for message in messages:
        prefix, content = "", message.Content
        for _ in message.Images:
            tag = f"[img-{count}]"
            count += 1
            if "[img]" in content:
                content = content.replace("[img]", tag, 1)
            else:
                prefix += tag
        tagged.append(replace(message, Content=prefix + content) if message.Images else message)
    return tagged


def render(
    template: str | OllamaTemplate,
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | None = None,
    modelfile_messages: Sequence[Mapping[str, Any]] = (),
    tools: Sequence[Mapping[str, Any]] | None = None,
    think: bool | str | None = None,
    today: date | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> str:
    """The prompt Ollama's /api/chat builds for `messages` with this template.

    `system` is the Modelfile SYSTEM: Ollama puts it first unless the request's own first message is a
    system message. `modelfile_messages` (Modelfile MESSAGE lines) go before the request's messages.
    """
    parsed = template if isinstance(template, OllamaTemplate) else parse_template(template)
    if not isinstance(messages, (list, tuple)):
        raise InputError("messages must be a list of message objects")
    request = [message_from_dict(m, f"messages[{i}]") for i, m in enumerate(messages)]
    history = [message_from_dict(m, f"Modelfile MESSAGE {i + 1}") for i, m in enumerate(modelfile_messages)]
    full = history + request
    if system and (not request or request[0].Role != "system"):
        full.insert(0, Message(Role="system", Content=system))
    api_tools = [tool_from_dict(t, f"tools[{i}]") for i, t in enumerate(tools or ())]
    return execute(parsed, _with_image_tags(full), api_tools, think, today, limits)


# ------------------------------------------------------------------------ families (template.Named)


@dataclass(frozen=True)
class OllamaFamily:
    """One of Ollama's built-in templates: its Go template and the stop words Ollama applies with it.

    Ollama reads only "stop" from a family's parameter file; other keys there (e.g. gemma3's temperature)
    are dropped when it writes the params layer.
    """

    name: str
    template: str
    stop: tuple[str, ...]


FAMILIES_ENV = "MLDEBUG_OLLAMA_TEMPLATES"


def families_dir() -> Path | None:
    """The folder of Ollama's family templates (index.json, NAME.gotmpl, NAME.json), if the user named one."""
    folder = os.environ.get(FAMILIES_ENV)
    if not folder:
        return None
    path = Path(folder)
    if not (path / "index.json").is_file():
        raise InputError(
            f"{FAMILIES_ENV}={folder}: no index.json there",
            hint="point it at the template/ folder of an Ollama source tree (index.json and the *.gotmpl files)",
        )
    return path


@functools.cache
def _index(folder: Path) -> tuple[tuple[str, str], ...]:
    entries = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    return tuple((entry["name"], entry["template"]) for entry in entries)


def family_names(folder: Path) -> tuple[str, ...]:
    """Every family template in the folder, sorted (some, like vicuna, are not in the detection index)."""
    return tuple(sorted(p.name[: -len(".gotmpl")] for p in folder.iterdir() if p.name.endswith(".gotmpl")))


@functools.cache
def load_family(name: str, folder: Path) -> OllamaFamily:
    """A family's template (line endings normalised as Ollama does) and stop words."""
    if name not in family_names(folder):
        raise InputError(f"unknown Ollama template family {name!r}", hint=f"known: {', '.join(family_names(folder))}")
    template = (folder / f"{name}.gotmpl").read_bytes().decode("utf-8").replace("\r\n", "\n")
    params_file = folder / f"{name}.json"
    stop: tuple[str, ...] = ()
    if params_file.is_file():
        stop = tuple(json.loads(params_file.read_text(encoding="utf-8")).get("stop") or ())
    return OllamaFamily(name, template, stop)


def levenshtein(a: str, b: str) -> int:
    """Edit distance over code points (agnivade/levenshtein works on runes), bit-parallel (Myers/Hyyrö)."""
    pattern, text = (a, b) if len(a) >= len(b) else (b, a)
    if not text:
        return len(pattern)
    masks: dict[str, int] = {}
    for i, ch in enumerate(pattern):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full, high = (1 << len(pattern)) - 1, 1 << (len(pattern) - 1)
    plus, minus, score = full, 0, len(pattern)
    for ch in text:
        eq = masks.get(ch, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        horizontal_plus = minus | (~(xh | plus) & full)
        horizontal_minus = plus & xh
        if horizontal_plus & high:
            score += 1
        elif horizontal_minus & high:
            score -= 1
        horizontal_plus = ((horizontal_plus << 1) | 1) & full
        horizontal_minus = (horizontal_minus << 1) & full
        plus = horizontal_minus | (~(xv | horizontal_plus) & full)
        minus = horizontal_plus & xv
    return score


def detect_family(hf_template: str, folder: Path) -> str | None:
    """The family Ollama picks when importing a GGUF without TEMPLATE (template.Named), or None.

    The first index entry with the smallest edit distance to the HF chat template wins, if below 100.
    """
    best_name, best = None, DETECTION_THRESHOLD
    for name, template in _index(folder):
        if abs(len(template) - len(hf_template)) >= best:
            continue  # the length difference is a lower bound on the distance
        distance = levenshtein(hf_template, template)
        if distance < best:
            best_name, best = name, distance
    return best_name
