"""Whether a chat template reads a message's content as a list of parts ("openai") or as one string ("string").

Serving engines decide from the template's syntax tree how to hand it a message whose content is a list of parts
(vLLM's ``--chat-template-content-format auto``): a template that loops over a message's content gets the parts,
any other gets one string. The rule read here: a ``for`` loop over the content of a message, where a message is
the target of a loop over ``messages`` (or a name or namespace attribute set from it, sliced or filtered), or a loop
over a name ``content`` outside macros, or a loop inside a macro over a parameter some call passes a message's
content to. Held to vLLM 0.33.0's own detection on every template of the fixtures and the corpus
(tests/engines/test_vllm_multimodal.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from jinja2.nodes import Call, Macro, Node

ContentFormat = Literal["string", "openai"]


def content_format(template: str) -> ContentFormat:
    """"openai" when the template loops over a message's content parts, else "string" (also for a template that
    does not parse: the engine then falls back to strings)."""
    import jinja2
    from jinja2 import nodes
    from transformers.utils import chat_template_utils

    try:  # the environment transformers renders with (its extensions: generation, loop controls)
        tree = chat_template_utils._compile_jinja_template(template).environment.parse(template)
    except jinja2.TemplateError:
        return "string"
    lists = _message_lists(tree)
    messages = {loop.target.name for loop in tree.find_all(nodes.For)
                if isinstance(loop.target, nodes.Name) and _names(loop.iter) & lists}
    macros = list(tree.find_all(nodes.Macro))
    in_macros = {id(loop) for macro in macros for loop in macro.find_all(nodes.For)}
    for loop in tree.find_all(nodes.For):
        if _content_of(loop.iter, messages):
            return "openai"
        if id(loop) not in in_macros and isinstance(loop.iter, nodes.Name) and loop.iter.name == "content":
            return "openai"
    for macro in macros:
        params = _content_params(tree, macro, messages)
        if any(isinstance(loop.iter, nodes.Name) and loop.iter.name in params for loop in macro.find_all(nodes.For)):
            return "openai"
    return "string"


def _message_lists(tree: Node) -> set[str]:
    """``messages`` and every name (or ``ns.attr``) set from it, sliced or filtered, to a fixed point."""
    from jinja2 import nodes

    found = {"messages"}
    while True:
        before = len(found)
        for assign in tree.find_all(nodes.Assign):
            target, value = assign.target, assign.node
            if isinstance(target, nodes.Name) and _names(value) & found:
                found.add(target.name)
            elif isinstance(target, nodes.Name) and isinstance(value, nodes.Call) and \
                    isinstance(value.node, nodes.Name) and value.node.name == "namespace":
                found.update(f"{target.name}.{k.key}" for k in value.kwargs if _names(k.value) & found)
            elif isinstance(target, (nodes.NSRef, nodes.Getattr)) and _names(value) & found:
                dotted = _dotted(target)
                if dotted:
                    found.add(dotted)
        if len(found) == before:
            return found


def _unwrap(node: Any) -> Any:
    """The expression under filters, tests and slices (``messages[1:] | selectattr(...)`` -> ``messages``)."""
    from jinja2 import nodes

    while True:
        wrapped = isinstance(node, (nodes.Filter, nodes.Test)) and node.node is not None
        if not (wrapped or isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice)):
            return node
        node = node.node


def _names(node: Any) -> set[str]:
    """The loaded name (or dotted namespace attribute) an expression is, under filters and slices."""
    from jinja2 import nodes

    node = _unwrap(node)
    if isinstance(node, nodes.Name):
        return {node.name} if node.ctx == "load" else set()
    dotted = _dotted(node) if isinstance(node, nodes.Getattr) else None
    return {dotted} if dotted else set()


def _dotted(node: Any) -> str | None:
    from jinja2 import nodes

    if isinstance(node, nodes.NSRef):
        return f"{node.name}.{node.attr}"
    parts: list[str] = []
    while isinstance(node, nodes.Getattr):
        parts.append(node.attr)
        node = node.node
    if isinstance(node, nodes.Name) and parts:
        return ".".join([node.name, *reversed(parts)])
    return None


def _content_of(node: Any, messages: set[str]) -> bool:
    """``message.content`` or ``message['content']`` (under filters and slices) of a message name."""
    from jinja2 import nodes

    node = _unwrap(node)
    named = isinstance(node, nodes.Getattr) and node.attr == "content" or (
        isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and node.arg.value == "content")
    owner = getattr(node, "node", None)
    return named and isinstance(owner, nodes.Name) and owner.ctx == "load" and owner.name in messages


def _content_params(tree: Node, macro: Macro, messages: set[str]) -> set[str]:
    """The parameters of ``macro`` that a call passes a message's content to."""
    from jinja2 import nodes

    params = [arg.name for arg in macro.args]
    found: set[str] = set()
    for call in _calls(tree, macro.name):
        found.update(params[i] for i, arg in enumerate(call.args[:len(params)]) if _content_of(arg, messages))
        found.update(k.key for k in call.kwargs if isinstance(k, nodes.Keyword) and k.key in params
                     and _content_of(k.value, messages))
    return found


def _calls(tree: Node, name: str) -> Iterator[Call]:
    from jinja2 import nodes

    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == name:
            yield call
