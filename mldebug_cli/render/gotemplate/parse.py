"""The parser (text/template/parse/parse.go): trim markers, variable scoping, control structures, define/block."""

from __future__ import annotations

from collections.abc import Collection

from mldebug_cli.render.gotemplate.errors import TemplateSyntaxError, _line_col
from mldebug_cli.render.gotemplate.lex import _parse_number, _Token, _unquote
from mldebug_cli.render.gotemplate.nodes import (
    ActionNode,
    BoolNode,
    BranchNode,
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
    _Else,
    _End,
)

MAX_NESTING = 100  # control structures and parentheses; deeper templates are refused, not recursed into


class _Parser:
    def __init__(self, source: str, tokens: list[_Token], functions: Collection[str]) -> None:
        self.src = source
        self.tokens = tokens
        self.i = 0
        self.functions = functions
        self.vars = ["$"]
        self.range_depth = 0
        self.nesting = 0
        self.defined: dict[str, ListNode] = {}

    # token stream

    def next(self) -> _Token:
        token = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return token

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def next_non_space(self) -> _Token:
        token = self.next()
        while token.kind == "space":
            token = self.next()
        return token

    def peek_non_space(self) -> _Token:
        while self.tokens[self.i].kind == "space":
            self.i += 1
        return self.tokens[self.i]

    def backup(self) -> None:
        self.i -= 1

    def fail(self, pos: int, message: str) -> TemplateSyntaxError:
        line, col = _line_col(self.src, pos)
        return TemplateSyntaxError(f"template line {line}:{col}: {message}")

    def unexpected(self, token: _Token, context: str) -> TemplateSyntaxError:
        shown = "EOF" if token.kind == "eof" else f"<{token.value}>"
        return self.fail(token.pos, f"unexpected {shown} in {context}")

    def expect(self, kind: str, context: str) -> _Token:
        token = self.next_non_space()
        if token.kind != kind:
            raise self.unexpected(token, context)
        return token

    # top level

    def parse(self) -> tuple[ListNode, dict[str, ListNode]]:
        nodes: list[Node] = []
        while self.peek().kind != "eof":
            if self.peek().kind == "left":
                start = self.i
                self.next()
                token = self.next_non_space()
                if token.kind == "keyword" and token.value == "define":
                    self.parse_definition()
                    continue
                self.i = start
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                raise self.fail(node.pos, f"unexpected {{{{{'end' if isinstance(node, _End) else 'else'}}}}}")
            nodes.append(node)
        return ListNode(0, tuple(nodes)), self.defined

    def parse_definition(self) -> None:
        context = "define clause"
        name_token = self.next_non_space()
        if name_token.kind not in ("string", "raw_string"):
            raise self.unexpected(name_token, context)
        name = self.unquote(name_token)
        self.expect("right", context)
        saved_vars, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        self.vars = saved_vars
        if not isinstance(end, _End):
            raise self.fail(end.pos, f"unexpected {{{{else}}}} in {context}")
        self.add_template(name, body)

    def add_template(self, name: str, body: ListNode) -> None:
        # Go keeps an earlier definition when the new one is empty, otherwise the later one wins.
        if name in self.defined and all(isinstance(n, TextNode) and not n.text.strip() for n in body.nodes):
            return
        self.defined[name] = body

    def item_list(self) -> tuple[ListNode, _End | _Else]:
        start = self.peek_non_space().pos
        nodes: list[Node] = []
        while self.peek_non_space().kind != "eof":
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                return ListNode(start, tuple(nodes)), node
            nodes.append(node)
        raise self.fail(len(self.src), "unexpected EOF")

    def text_or_action(self) -> Node | _End | _Else:
        token = self.next_non_space()
        if token.kind == "text":
            return TextNode(token.pos, token.value)
        if token.kind == "left":
            return self.action()
        raise self.unexpected(token, "input")

    def action(self) -> Node | _End | _Else:
        token = self.next_non_space()
        if token.kind == "keyword":
            handler = {
                "block": self.block_control,
                "break": lambda: self.loop_control(token, BreakNode),
                "continue": lambda: self.loop_control(token, ContinueNode),
                "else": lambda: self.else_control(token),
                "end": lambda: _End(self.expect("right", "end").pos),
                "if": lambda: self.branch_control(token, "if", IfNode),
                "range": lambda: self.branch_control(token, "range", RangeNode),
                "template": self.template_control,
                "with": lambda: self.branch_control(token, "with", WithNode),
            }.get(token.value)
            if handler is not None:
                return handler()
        self.backup()
        return ActionNode(self.peek().pos, self.pipeline("command", "right"))

    # control structures

    def loop_control(self, token: _Token, node_type: type[BreakNode] | type[ContinueNode]) -> Node:
        after = self.next_non_space()
        if after.kind != "right":
            raise self.unexpected(after, f"{{{{{token.value}}}}}")
        if self.range_depth == 0:
            raise self.fail(token.pos, f"{{{{{token.value}}}}} outside {{{{range}}}}")
        return node_type(token.pos)

    def else_control(self, token: _Token) -> _Else:
        after = self.peek_non_space()
        if after.kind == "keyword" and after.value in ("if", "with"):
            return _Else(after.pos)  # "else if" / "else with": the keyword stays pending
        self.expect("right", "else")
        return _Else(token.pos)

    def branch_control(self, token: _Token, context: str, node_type: type[BranchNode]) -> Node:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.fail(token.pos, f"control structures nested deeper than {MAX_NESTING}")
        vars_mark = len(self.vars)
        try:
            pipe = self.pipeline(context, "right")
            if context == "range":
                self.range_depth += 1
            body, end = self.item_list()
            if context == "range":
                self.range_depth -= 1
            else_list = self.else_branch(context, node_type, end) if isinstance(end, _Else) else None
        finally:
            del self.vars[vars_mark:]
            self.nesting -= 1
        return node_type(token.pos, pipe, body, else_list)

    def else_branch(self, context: str, node_type: type[BranchNode], end: _Else) -> ListNode:
        after = self.peek()
        if context in ("if", "with") and after.kind == "keyword" and after.value == context:
            keyword = self.next()  # {{else if x}}...{{end}} is {{else}}{{if x}}...{{end}}{{end}}
            return ListNode(end.pos, (self.branch_control(keyword, context, node_type),))
        else_list, closing = self.item_list()
        if not isinstance(closing, _End):
            raise self.fail(closing.pos, "expected end; found {{else}}")
        return else_list

    def template_control(self) -> Node:
        context = "template clause"
        token = self.next_non_space()
        if token.kind not in ("string", "raw_string"):
            raise self.unexpected(token, context)
        name = self.unquote(token)
        pipe = None
        if self.next_non_space().kind != "right":
            self.backup()
            pipe = self.pipeline(context, "right")
        return TemplateNode(token.pos, name, pipe)

    def block_control(self) -> Node:
        context = "block clause"
        token = self.next_non_space()
        if token.kind not in ("string", "raw_string"):
            raise self.unexpected(token, context)
        name = self.unquote(token)
        pipe = self.pipeline(context, "right")
        saved_vars, saved_range, self.vars, self.range_depth = self.vars, self.range_depth, ["$"], 0
        body, end = self.item_list()
        self.vars, self.range_depth = saved_vars, saved_range
        if not isinstance(end, _End):
            raise self.fail(end.pos, f"unexpected {{{{else}}}} in {context}")
        self.add_template(name, body)
        return TemplateNode(token.pos, name, pipe)

    # pipelines

    def pipeline(self, context: str, end: str) -> PipeNode:
        start = self.peek_non_space().pos
        decl, is_assign = self.declarations(context)
        cmds: list[CommandNode] = []
        while True:
            token = self.next_non_space()
            if token.kind == end:
                return self.check_pipeline(PipeNode(start, decl, is_assign, tuple(cmds)), context, token)
            if token.kind in (
                "bool",
                "char_constant",
                "dot",
                "field",
                "identifier",
                "number",
                "nil",
                "raw_string",
                "string",
                "variable",
                "lparen",
            ):
                self.backup()
                cmds.append(self.command())
            else:
                raise self.unexpected(token, context)

    def declarations(self, context: str) -> tuple[tuple[VariableNode, ...], bool]:
        decl: list[VariableNode] = []
        while self.peek_non_space().kind == "variable":
            start = self.i
            variable = self.next()
            after = self.peek_non_space()
            if after.kind in ("assign", "declare"):
                self.next()
                decl.append(VariableNode(variable.pos, (variable.value,)))
                self.vars.append(variable.value)
                return tuple(decl), after.kind == "assign"
            if after.kind == "char" and after.value == ",":
                self.next()
                decl.append(VariableNode(variable.pos, (variable.value,)))
                self.vars.append(variable.value)
                if context == "range" and len(decl) < 2 and self.peek_non_space().kind in ("variable", "right"):
                    continue
                if context == "range" and len(decl) < 2:
                    raise self.fail(after.pos, "range can only initialize variables")
                raise self.fail(after.pos, f"too many declarations in {context}")
            self.i = start
            break
        if decl:
            raise self.fail(decl[-1].pos, f"missing := after {decl[-1]} in {context}")
        return (), False

    def check_pipeline(self, pipe: PipeNode, context: str, end_token: _Token) -> PipeNode:
        if not pipe.cmds:
            raise self.fail(end_token.pos, f"missing value for {context}")
        for stage, cmd in enumerate(pipe.cmds[1:], start=2):
            if isinstance(cmd.args[0], (BoolNode, DotNode, NilNode, NumberNode, StringNode)):
                raise self.fail(cmd.pos, f"non executable command in pipeline stage {stage}")
        return pipe

    def command(self) -> CommandNode:
        start = self.peek_non_space().pos
        args: list[Node] = []
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                args.append(operand)
            token = self.next()
            if token.kind == "space":
                continue
            if token.kind in ("right", "rparen"):
                self.backup()
            elif token.kind != "pipe":
                raise self.unexpected(token, "operand")
            break
        if not args:
            raise self.fail(start, "empty command")
        return CommandNode(start, tuple(args))

    def operand(self) -> Node | None:
        node = self.term()
        if node is None or self.peek().kind != "field":
            return node
        fields: list[str] = []
        while self.peek().kind == "field":
            fields.append(self.next().value[1:])
        if isinstance(node, FieldNode):
            return FieldNode(node.pos, node.idents + tuple(fields))
        if isinstance(node, VariableNode):
            return VariableNode(node.pos, node.idents + tuple(fields))
        if isinstance(node, (BoolNode, StringNode, NumberNode, NilNode, DotNode)):
            raise self.fail(node.pos, f"unexpected . after term {str(node)!r}")
        return ChainNode(node.pos, node, tuple(fields))

    def term(self) -> Node | None:
        token = self.next_non_space()
        kind, value, pos = token.kind, token.value, token.pos
        if kind == "identifier":
            if value not in self.functions:
                raise self.fail(pos, f'function "{value}" not defined')
            return IdentifierNode(pos, value)
        if kind == "dot":
            return DotNode(pos)
        if kind == "nil":
            return NilNode(pos)
        if kind == "variable":
            if value not in self.vars:
                raise self.fail(pos, f'undefined variable "{value}"')
            return VariableNode(pos, (value,))
        if kind == "field":
            return FieldNode(pos, (value[1:],))
        if kind == "bool":
            return BoolNode(pos, value == "true")
        if kind in ("number", "char_constant"):
            try:
                return NumberNode(pos, value, _parse_number(value, kind))
            except ValueError as exc:
                raise self.fail(pos, str(exc)) from None
        if kind == "lparen":
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise self.fail(pos, f"parentheses nested deeper than {MAX_NESTING}")
            pipe = self.pipeline("parenthesized pipeline", "rparen")
            self.nesting -= 1
            return pipe
        if kind in ("string", "raw_string"):
            return StringNode(pos, value, self.unquote(token))
        self.backup()
        return None

    def unquote(self, token: _Token) -> str:
        try:
            return _unquote(token.value)
        except ValueError as exc:
            raise self.fail(token.pos, f"{exc} in {token.value}") from None
