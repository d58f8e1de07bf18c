"""The parse tree (text/template/parse/node.go)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ListNode:
    pos: int
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class TextNode:
    pos: int
    text: str


@dataclass(frozen=True)
class FieldNode:
    pos: int
    idents: tuple[str, ...]

    def __str__(self) -> str:
        return "." + ".".join(self.idents)


@dataclass(frozen=True)
class VariableNode:
    pos: int
    idents: tuple[str, ...]  # ("$x", "Field", ...)

    def __str__(self) -> str:
        return ".".join(self.idents)


@dataclass(frozen=True)
class IdentifierNode:
    pos: int
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DotNode:
    pos: int

    def __str__(self) -> str:
        return "."


@dataclass(frozen=True)
class NilNode:
    pos: int

    def __str__(self) -> str:
        return "nil"


@dataclass(frozen=True)
class BoolNode:
    pos: int
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class NumberNode:
    pos: int
    text: str
    value: int | float

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class StringNode:
    pos: int
    quoted: str
    text: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(frozen=True)
class ChainNode:
    pos: int
    node: Node
    fields: tuple[str, ...]

    def __str__(self) -> str:
        inner = f"({self.node})" if isinstance(self.node, PipeNode) else str(self.node)
        return inner + "".join("." + f for f in self.fields)


@dataclass(frozen=True)
class CommandNode:
    pos: int
    args: tuple[Node, ...]

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, PipeNode) else str(a) for a in self.args)


@dataclass(frozen=True)
class PipeNode:
    pos: int
    decl: tuple[VariableNode, ...]
    is_assign: bool
    cmds: tuple[CommandNode, ...]

    def __str__(self) -> str:
        decl = ", ".join(str(v) for v in self.decl)
        prefix = f"{decl} {'=' if self.is_assign else ':='} " if decl else ""
        return prefix + " | ".join(str(c) for c in self.cmds)


@dataclass(frozen=True)
class ActionNode:
    pos: int
    pipe: PipeNode


@dataclass(frozen=True)
class IfNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class RangeNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class WithNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class BreakNode:
    pos: int


@dataclass(frozen=True)
class ContinueNode:
    pos: int


@dataclass(frozen=True)
class TemplateNode:
    pos: int
    name: str
    pipe: PipeNode | None


Node = (
    ListNode
    | TextNode
    | FieldNode
    | VariableNode
    | IdentifierNode
    | DotNode
    | NilNode
    | BoolNode
    | NumberNode
    | StringNode
    | ChainNode
    | CommandNode
    | PipeNode
    | ActionNode
    | IfNode
    | RangeNode
    | WithNode
    | BreakNode
    | ContinueNode
    | TemplateNode
)
BranchNode = IfNode | RangeNode | WithNode


@dataclass(frozen=True)
class _End:
    pos: int


@dataclass(frozen=True)
class _Else:
    pos: int
