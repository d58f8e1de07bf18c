"""A Go text/template interpreter for the subset Ollama chat templates use.

Parsing follows Go's text/template/parse (trim markers, comments, variable scoping, else-if/else-with
chains, define/template/block, break/continue); execution follows text/template's exec.go and funcs.go
(truthiness, missing map keys, comparisons between kinds, and/or short-circuit, fmt-style printing and
printf verbs). Values are Python data read as Go values: None is nil, bool/int/float/str are Go's basic
kinds, list/tuple are slices, dict is a map with string keys, and GoStruct subclasses are structs.
Hard limits on output size, steps and call depth stop hostile templates.

One module per part of Go's text/template: ``lex`` (and Go literals), ``nodes``, ``parse``, ``exec`` and
``funcs``, with ``values`` (Go kinds and truthiness), ``fmt`` (printing and printf), ``gojson`` and ``errors``.
"""

from __future__ import annotations

from mldebug_cli.render.gotemplate.errors import (
    TemplateError,
    TemplateExecError,
    TemplateFuncError,
    TemplateLimitError,
    TemplateSyntaxError,
)
from mldebug_cli.render.gotemplate.exec import DEFAULT_LIMITS, Limits, Template, identifiers, parse
from mldebug_cli.render.gotemplate.funcs import TemplateFunc
from mldebug_cli.render.gotemplate.gojson import go_json
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
)
from mldebug_cli.render.gotemplate.parse import MAX_NESTING
from mldebug_cli.render.gotemplate.values import GoStruct, is_true, json_tag

__all__ = [
    "ActionNode", "BoolNode", "BranchNode", "BreakNode", "ChainNode", "CommandNode", "ContinueNode",
    "DEFAULT_LIMITS", "DotNode", "FieldNode", "GoStruct", "IdentifierNode", "IfNode", "Limits", "ListNode",
    "MAX_NESTING", "NilNode", "Node", "NumberNode", "PipeNode", "RangeNode", "StringNode", "Template",
    "TemplateError", "TemplateExecError", "TemplateFunc", "TemplateFuncError", "TemplateLimitError",
    "TemplateNode", "TemplateSyntaxError", "TextNode", "VariableNode", "WithNode", "go_json", "identifiers",
    "is_true", "json_tag", "parse",
]
