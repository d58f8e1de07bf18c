"""The executor (text/template/exec.go), with hard limits on output, steps and call depth."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.render.gotemplate.errors import TemplateExecError, TemplateFuncError, TemplateLimitError, _line_col
from mldebug_cli.render.gotemplate.fmt import _fmt_value, _sorted_keys, _sprintf
from mldebug_cli.render.gotemplate.funcs import _BUILTINS, _LAZY_BUILTINS, TemplateFunc
from mldebug_cli.render.gotemplate.lex import _Lexer
from mldebug_cli.render.gotemplate.nodes import (
    ActionNode,
    BoolNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    FieldNode,
    IdentifierNode,
    IfNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    RangeNode,
    StringNode,
    TemplateNode,
    TextNode,
    VariableNode,
    WithNode,
)
from mldebug_cli.render.gotemplate.parse import _Parser
from mldebug_cli.render.gotemplate.values import GoStruct, _go_kind, _go_type_name, is_true


@dataclass(frozen=True)
class Limits:
    """Hard limits on one execution, so a hostile template cannot hang or exhaust memory."""

    max_output_chars: int = 8_000_000
    max_steps: int = 2_000_000  # nodes walked plus range iterations
    max_depth: int = 64  # nested {{template}} calls


DEFAULT_LIMITS = Limits()

_MISSING = object()  # no final value from a previous pipeline stage


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


@dataclass(frozen=True)
class Template:
    """A parsed Go template: the root tree and the templates it {{define}}s or {{block}}s."""

    source: str
    root: ListNode
    defined: Mapping[str, ListNode]

    def execute(
        self, data: Any, funcs: Mapping[str, TemplateFunc] | None = None, limits: Limits = DEFAULT_LIMITS
    ) -> str:
        """Run the template with `data` as dot and `$`; functions are the builtins plus `funcs`."""
        return _Executor(self, dict(funcs or {}), limits).run(data)

    def with_root(self, root: ListNode) -> Template:
        return dataclasses.replace(self, root=root)


MAX_SOURCE_CHARS = 1_000_000  # real Ollama templates are a few KiB; parsing is linear but its nodes are not small
MAX_TOKENS = 100_000  # actions and text runs of one template


def parse(source: str, func_names: Collection[str] = ()) -> Template:
    """Parse Go template text; `func_names` are the non-builtin functions it may call."""
    if len(source) > MAX_SOURCE_CHARS:
        raise TemplateLimitError(f"the template is {len(source):,} characters long, over the {MAX_SOURCE_CHARS:,} "
                                 "mldebug parses")
    if source.count("{{") > MAX_TOKENS:
        raise TemplateLimitError(f"the template has {source.count('{{'):,} actions, over the {MAX_TOKENS:,} "
                                 "mldebug parses")
    tokens = _Lexer(source).run()
    known = set(_BUILTINS) | _LAZY_BUILTINS | {"printf"} | set(func_names)
    root, defined = _Parser(source, tokens, known).parse()
    return Template(source, root, dict(defined))


class _Executor:
    def __init__(self, template: Template, funcs: dict[str, TemplateFunc], limits: Limits) -> None:
        self.template = template
        # Functions given to the template win over builtins of the same name, as in Go.
        printf = TemplateFunc(lambda fmt, *args: _sprintf(fmt, args, limits.max_output_chars), ("string",), True)
        self.funcs = {**_BUILTINS, "printf": printf, **funcs}
        self.limits = limits
        self.out: list[str] = []
        self.out_chars = 0
        self.steps = 0
        self.depth = 0
        self.vars: list[list[Any]] = []  # [name, value] pairs; innermost last

    def run(self, data: Any) -> str:
        self.vars = [["$", data]]
        try:
            self.walk(data, self.template.root)
        except RecursionError:
            raise TemplateLimitError("template execution nested too deeply") from None
        return "".join(self.out)

    # errors and limits

    def fail(self, node: Any, message: str) -> TemplateExecError:
        line, col = _line_col(self.template.source, getattr(node, "pos", 0))
        shown = (
            f" at <{node}>"
            if isinstance(node, (FieldNode, VariableNode, IdentifierNode, ChainNode, CommandNode, PipeNode))
            else ""
        )
        return TemplateExecError(f"template line {line}:{col}: executing{shown}: {message}")

    def limit(self, node: Any, message: str) -> TemplateLimitError:
        line, col = _line_col(self.template.source, node.pos)
        return TemplateLimitError(f"template line {line}:{col}: {message}")

    def tick(self, node: Any) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise self.limit(node, f"execution exceeded {self.limits.max_steps:,} steps")

    def emit(self, text: str) -> None:
        self.out_chars += len(text)
        if self.out_chars > self.limits.max_output_chars:
            raise TemplateLimitError(f"template output exceeded {self.limits.max_output_chars:,} characters")
        self.out.append(text)

    # variables

    def push(self, name: str, value: Any) -> None:
        self.vars.append([name, value])

    def set_var(self, node: VariableNode, value: Any) -> None:
        for entry in reversed(self.vars):
            if entry[0] == node.idents[0]:
                entry[1] = value
                return
        raise self.fail(node, f"undefined variable: {node.idents[0]}")

    def var_value(self, node: VariableNode) -> Any:
        for name, value in reversed(self.vars):
            if name == node.idents[0]:
                return value
        raise self.fail(node, f"undefined variable: {node.idents[0]}")

    # walking

    def walk(self, dot: Any, node: Node) -> None:
        self.tick(node)
        if isinstance(node, ListNode):
            for child in node.nodes:
                self.walk(dot, child)
        elif isinstance(node, TextNode):
            self.emit(node.text)
        elif isinstance(node, ActionNode):
            value = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.emit("<no value>" if value is None else _fmt_value(value))
        elif isinstance(node, (IfNode, WithNode)):
            self.walk_if_or_with(dot, node)
        elif isinstance(node, RangeNode):
            self.walk_range(dot, node)
        elif isinstance(node, TemplateNode):
            self.walk_template(dot, node)
        elif isinstance(node, BreakNode):
            raise _Break
        elif isinstance(node, ContinueNode):
            raise _Continue
        else:
            raise self.fail(node, f"unknown node {type(node).__name__}")

    def walk_if_or_with(self, dot: Any, node: IfNode | WithNode) -> None:
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            if is_true(value):
                self.walk(value if isinstance(node, WithNode) else dot, node.list)
            elif node.else_list is not None:
                self.walk(dot, node.else_list)
        finally:
            del self.vars[mark:]

    def walk_range(self, dot: Any, node: RangeNode) -> None:
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            body_mark = len(self.vars)
            ran = False
            for index, element in self.range_items(node, value):
                ran = True
                self.tick(node)
                self.set_range_vars(node.pipe, body_mark, index, element)
                try:
                    self.walk(element, node.list)
                except _Continue:
                    pass
                except _Break:
                    break
                finally:
                    del self.vars[body_mark:]
            if not ran and node.else_list is not None:
                self.walk(dot, node.else_list)
        finally:
            del self.vars[mark:]

    def range_items(self, node: RangeNode, value: Any) -> Any:
        kind = _go_kind(value)
        if kind == "invalid":
            return ()
        if kind == "slice":
            return enumerate(value)
        if kind == "map":
            return ((key, value[key]) for key in _sorted_keys(value))
        if kind == "int":
            if len(node.pipe.decl) > 1:
                raise self.fail(node.pipe, f"can't use {value} to iterate over more than one variable")
            return ((None, i) for i in range(value))
        raise self.fail(node.pipe, f"range can't iterate over {_fmt_value(value)}")

    def set_range_vars(self, pipe: PipeNode, body_mark: int, index: Any, element: Any) -> None:
        if not pipe.decl:
            return
        if pipe.is_assign:
            if len(pipe.decl) > 1:
                self.set_var(pipe.decl[0], index)
                self.set_var(pipe.decl[1], element)
            else:
                self.set_var(pipe.decl[0], element)
            return
        self.vars[body_mark - 1][1] = element  # the last declared variable gets the element
        if len(pipe.decl) > 1:
            self.vars[body_mark - 2][1] = index

    def walk_template(self, dot: Any, node: TemplateNode) -> None:
        body = self.template.defined.get(node.name)
        if body is None and node.name == "":
            body = self.template.root
        if body is None:
            raise self.fail(node, f'template "{node.name}" not defined')
        if self.depth >= self.limits.max_depth:
            raise self.limit(node, f"exceeded maximum template depth ({self.limits.max_depth})")
        new_dot = self.eval_pipeline(dot, node.pipe) if node.pipe is not None else None
        saved_vars, self.vars = self.vars, [["$", new_dot]]
        self.depth += 1
        try:
            self.walk(new_dot, body)
        finally:
            self.depth -= 1
            self.vars = saved_vars

    # evaluation

    def eval_pipeline(self, dot: Any, pipe: PipeNode) -> Any:
        value: Any = _MISSING
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
        for variable in pipe.decl:
            if pipe.is_assign:
                self.set_var(variable, value)
            else:
                self.push(variable.idents[0], value)
        return value

    def eval_command(self, dot: Any, cmd: CommandNode, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, FieldNode):
            return self.eval_field_chain(dot, dot, first, first.idents, cmd.args, final)
        if isinstance(first, ChainNode):
            return self.eval_chain(dot, first, cmd.args, final)
        if isinstance(first, IdentifierNode):
            return self.eval_function(dot, first, cmd.args, final)
        if isinstance(first, VariableNode):
            return self.eval_variable(dot, first, cmd.args, final)
        self.not_a_function(cmd.args, final)
        if isinstance(first, PipeNode):
            return self.eval_pipeline(dot, first)
        if isinstance(first, DotNode):
            return dot
        if isinstance(first, NilNode):
            raise self.fail(cmd, "nil is not a command")
        if isinstance(first, (BoolNode, NumberNode)):
            return first.value
        if isinstance(first, StringNode):
            return first.text
        raise self.fail(cmd, f"can't evaluate command {first}")

    def not_a_function(self, args: Sequence[Node], final: Any) -> None:
        if len(args) > 1 or final is not _MISSING:
            raise self.fail(args[0], f"can't give argument to non-function {args[0]}")

    def eval_variable(self, dot: Any, node: VariableNode, args: Sequence[Node] | None, final: Any) -> Any:
        value = self.var_value(node)
        if len(node.idents) == 1:
            self.not_a_function(args or (node,), final)
            return value
        return self.eval_field_chain(dot, value, node, node.idents[1:], args, final)

    def eval_chain(self, dot: Any, chain: ChainNode, args: Sequence[Node] | None, final: Any) -> Any:
        if isinstance(chain.node, NilNode):
            raise self.fail(chain, f"indirection through explicit nil in {chain}")
        receiver = self.eval_arg(dot, chain.node)
        return self.eval_field_chain(dot, receiver, chain, chain.fields, args, final)

    def eval_field_chain(
        self, dot: Any, receiver: Any, node: Any, idents: Sequence[str], args: Sequence[Node] | None, final: Any
    ) -> Any:
        for i, name in enumerate(idents):
            last = i == len(idents) - 1
            if receiver is None:
                if i > 0:  # a nil interface produced earlier in the chain, as Go reports it
                    raise self.fail(node, f"nil pointer evaluating interface {{}}.{name}")
                return None  # an invalid receiver (nil dot or variable) yields the zero value
            receiver = self.eval_field(dot, node, name, args if last else None, final if last else _MISSING, receiver)
        return receiver

    def eval_field(self, dot: Any, node: Any, name: str, args: Sequence[Node] | None, final: Any, receiver: Any) -> Any:
        has_args = (args is not None and len(args) > 1) or final is not _MISSING
        method = getattr(receiver, "go_methods", {}).get(name)
        if method is not None:
            values = [self.eval_arg(dot, a) for a in (args or ())[1:]]
            if final is not _MISSING:
                values.append(final)
            try:
                return method(receiver, *values)
            except TypeError:
                raise self.fail(node, f"wrong number of args for {name}: got {len(values)}") from None
        if isinstance(receiver, GoStruct):
            fields = dict(receiver.go_fields())
            if name in fields:
                if has_args:
                    raise self.fail(node, f"{name} has arguments but cannot be invoked as function")
                return fields[name]
        elif isinstance(receiver, dict):
            if has_args:
                raise self.fail(node, f"{name} is not a method but has arguments")
            return receiver.get(name)
        raise self.fail(node, f"can't evaluate field {name} in type {_go_type_name(receiver)}")

    def eval_function(self, dot: Any, node: IdentifierNode, args: Sequence[Node], final: Any) -> Any:
        name = node.name
        arg_nodes = list(args[1:])
        if name in _LAZY_BUILTINS and name not in self.funcs:
            return self.eval_and_or(dot, node, name, arg_nodes, final)
        fn = self.funcs.get(name)
        if fn is None:
            raise self.fail(node, f'"{name}" is not a defined function')
        count = len(arg_nodes) + (final is not _MISSING)
        self.check_arg_count(node, name, fn, count)
        values = [self.eval_typed_arg(dot, fn.param_type(i), a) for i, a in enumerate(arg_nodes)]
        if final is not _MISSING:
            values.append(self.check_type(node, fn.param_type(len(values)), final))
        try:
            result = fn.call(*values)
        except TemplateFuncError as exc:
            raise self.fail(node, f"error calling {name}: {exc}") from None
        except TemplateLimitError as exc:
            raise self.limit(node, str(exc)) from None
        if isinstance(result, str) and len(result) > self.limits.max_output_chars:
            raise self.limit(node, f"{name} built a string longer than {self.limits.max_output_chars:,} characters")
        return result

    def check_arg_count(self, node: IdentifierNode, name: str, fn: TemplateFunc, count: int) -> None:
        fixed = len(fn.params)
        if fn.variadic and count < fixed:
            raise self.fail(node, f"wrong number of args for {name}: want at least {fixed} got {count}")
        if not fn.variadic and count != fixed:
            raise self.fail(node, f"wrong number of args for {name}: want {fixed} got {count}")

    def eval_and_or(self, dot: Any, node: IdentifierNode, name: str, arg_nodes: list[Node], final: Any) -> Any:
        if not arg_nodes and final is _MISSING:
            raise self.fail(node, f"wrong number of args for {name}: want at least 1 got 0")
        value: Any = None
        for arg in arg_nodes:
            value = self.eval_arg(dot, arg)
            if is_true(value) == (name == "or"):
                return value
        return final if final is not _MISSING else value

    def eval_typed_arg(self, dot: Any, param_type: str | None, node: Node) -> Any:
        if param_type == "string" and isinstance(node, NilNode):
            raise self.fail(node, "cannot assign nil to string")
        return self.check_type(node, param_type, self.eval_arg(dot, node))

    def check_type(self, node: Any, param_type: str | None, value: Any) -> Any:
        if param_type == "string" and not isinstance(value, str):
            if value is None:
                raise self.fail(node, "invalid value; expected string")
            raise self.fail(node, f"wrong type for value; expected string; got {_go_type_name(value)}")
        return value

    def eval_arg(self, dot: Any, node: Node) -> Any:
        if isinstance(node, DotNode):
            return dot
        if isinstance(node, NilNode):
            return None
        if isinstance(node, FieldNode):
            return self.eval_field_chain(dot, dot, node, node.idents, (node,), _MISSING)
        if isinstance(node, VariableNode):
            return self.eval_variable(dot, node, None, _MISSING)
        if isinstance(node, PipeNode):
            return self.eval_pipeline(dot, node)
        if isinstance(node, IdentifierNode):
            return self.eval_function(dot, node, (node,), _MISSING)
        if isinstance(node, ChainNode):
            return self.eval_chain(dot, node, None, _MISSING)
        if isinstance(node, (BoolNode, NumberNode)):
            return node.value
        if isinstance(node, StringNode):
            return node.text
        raise self.fail(node, f"can't handle {node} for arg")


def identifiers(template: Template) -> list[str]:
    """Every field and variable identifier in the trees, in order (Ollama's template.Identifiers walk)."""
    names: list[str] = []
    for root in (template.root, *template.defined.values()):
        _collect_identifiers(root, names)
    return names


def _collect_identifiers(node: Any, names: list[str]) -> None:
    if isinstance(node, ListNode):
        for child in node.nodes:
            _collect_identifiers(child, names)
    elif isinstance(node, (ActionNode, TemplateNode)):
        if node.pipe is not None:
            _collect_identifiers(node.pipe, names)
    elif isinstance(node, (IfNode, RangeNode, WithNode)):
        _collect_identifiers(node.pipe, names)
        _collect_identifiers(node.list, names)
        if node.else_list is not None:
            _collect_identifiers(node.else_list, names)
    elif isinstance(node, PipeNode):
        for cmd in node.cmds:
            for arg in cmd.args:
                _collect_identifiers(arg, names)
    elif isinstance(node, (FieldNode, VariableNode)):
        names.extend(node.idents)
