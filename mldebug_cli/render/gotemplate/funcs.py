"""The builtin functions (text/template/funcs.go): index, slice, comparisons, print, escapers, call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.render.gotemplate.errors import TemplateFuncError
from mldebug_cli.render.gotemplate.fmt import _fmt_value, _html_escape, _js_escape, _sprint, _url_query_escape
from mldebug_cli.render.gotemplate.values import _go_kind, _go_type_name, is_true


@dataclass(frozen=True)
class TemplateFunc:
    """A function templates can call: its Python implementation and Go signature.

    ``params`` are the fixed parameters' types ("string" or None for any value); with ``variadic`` set,
    any number of further arguments of type ``variadic`` ("string" or None) follow.
    """

    call: Callable[..., Any]
    params: tuple[str | None, ...] = (None,)
    variadic: bool = False
    variadic_type: str | None = None

    def param_type(self, index: int) -> str | None:
        return self.params[index] if index < len(self.params) else self.variadic_type


def _indirect_len(item: Any) -> int:
    kind = _go_kind(item)
    if kind == "string":
        return len(item.encode("utf-8"))
    if kind in ("slice", "map"):
        return len(item)
    if kind == "invalid":
        raise TemplateFuncError("len of nil pointer")
    raise TemplateFuncError(f"len of type {_go_type_name(item)}")


def _index_arg(index: Any, cap: int) -> int:
    if index is None:
        raise TemplateFuncError("cannot index slice/array with nil")
    if _go_kind(index) != "int":
        raise TemplateFuncError(f"cannot index slice/array with type {_go_type_name(index)}")
    if index < 0 or index > cap:
        raise TemplateFuncError(f"index out of range: {index}")
    return index


def _index(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise TemplateFuncError("index of untyped nil")
    for index in indexes:
        kind = _go_kind(item)
        if kind in ("slice", "string"):
            sequence = item.encode("utf-8") if kind == "string" else item
            position = _index_arg(index, len(sequence))
            if position == len(sequence):
                raise TemplateFuncError(f"index out of range: {position}")
            item = sequence[position]
        elif kind == "map":
            if not isinstance(index, str):
                raise TemplateFuncError(f"value has type {_go_type_name(index)}; should be string")
            item = item.get(index)
        elif kind == "invalid":
            raise TemplateFuncError("index of nil pointer")
        else:
            raise TemplateFuncError(f"can't index item of type {_go_type_name(item)}")
    return item


def _slice(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise TemplateFuncError("slice of untyped nil")
    if len(indexes) > 3:
        raise TemplateFuncError(f"too many slice indexes: {len(indexes)}")
    kind = _go_kind(item)
    if kind == "string" and len(indexes) == 3:
        raise TemplateFuncError("cannot 3-index slice a string")
    if kind not in ("string", "slice"):
        raise TemplateFuncError(f"can't slice item of type {_go_type_name(item)}")
    sequence = item.encode("utf-8") if kind == "string" else item
    bounds = [0, len(sequence)]
    for i, index in enumerate(indexes[:2]):
        bounds[i] = _index_arg(index, len(sequence))
    if len(indexes) == 3:
        _index_arg(indexes[2], len(sequence))
    if bounds[0] > bounds[1]:
        raise TemplateFuncError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if kind == "string":
        return sequence[bounds[0] : bounds[1]].decode("utf-8", errors="replace")
    part = list(item[bounds[0] : bounds[1]])
    try:
        return type(item)(part)
    except TypeError:
        return part


_BASIC_KINDS = ("bool", "int", "float", "string")


def _eq(first: Any, *others: Any) -> bool:
    if not others:
        raise TemplateFuncError("missing argument for comparison")
    kind1 = _go_kind(first)
    for other in others:
        kind2 = _go_kind(other)
        if kind1 != kind2:
            if first is not None and other is not None:
                raise TemplateFuncError("incompatible types for comparison")
            continue
        if kind1 in _BASIC_KINDS or kind1 == "invalid":
            if first == other:
                return True
        elif kind1 in ("slice", "map"):
            raise TemplateFuncError(f"non-comparable type {_fmt_value(first)}: {_go_type_name(first)}")
        elif first == other:
            return True
    return False


def _ne(first: Any, second: Any) -> bool:
    return not _eq(first, second)


def _lt(first: Any, second: Any) -> bool:
    kind1, kind2 = _go_kind(first), _go_kind(second)
    if kind1 not in _BASIC_KINDS or kind2 not in _BASIC_KINDS:
        raise TemplateFuncError("invalid type for comparison")
    if kind1 != kind2:
        raise TemplateFuncError("incompatible types for comparison")
    if kind1 == "bool":
        raise TemplateFuncError("invalid type for comparison")
    return first < second


def _le(first: Any, second: Any) -> bool:
    return _lt(first, second) or _eq(first, second)


def _gt(first: Any, second: Any) -> bool:
    return not _le(first, second)


def _ge(first: Any, second: Any) -> bool:
    return not _lt(first, second)


def _escaper_text(args: Sequence[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return _sprint(args)


def _call(fn: Any, *args: Any) -> Any:
    raise TemplateFuncError(f"non-function {_fmt_value(fn)} of type {_go_type_name(fn)}")


_LAZY_BUILTINS = frozenset({"and", "or"})  # arguments evaluated one at a time by the executor
_BUILTINS: Mapping[str, TemplateFunc] = {
    "not": TemplateFunc(lambda v: not is_true(v)),
    "len": TemplateFunc(_indirect_len),
    "index": TemplateFunc(_index, (None,), variadic=True),
    "slice": TemplateFunc(_slice, (None,), variadic=True),
    "eq": TemplateFunc(_eq, (None,), variadic=True),
    "ne": TemplateFunc(_ne, (None, None)),
    "lt": TemplateFunc(_lt, (None, None)),
    "le": TemplateFunc(_le, (None, None)),
    "gt": TemplateFunc(_gt, (None, None)),
    "ge": TemplateFunc(_ge, (None, None)),
    "print": TemplateFunc(lambda *a: _sprint(a), (), variadic=True),
    "println": TemplateFunc(lambda *a: " ".join(_fmt_value(x) for x in a) + "\n", (), variadic=True),
    "html": TemplateFunc(lambda *a: _html_escape(_escaper_text(a)), (), variadic=True),
    "js": TemplateFunc(lambda *a: _js_escape(_escaper_text(a)), (), variadic=True),
    "urlquery": TemplateFunc(lambda *a: _url_query_escape(_escaper_text(a)), (), variadic=True),
    "call": TemplateFunc(_call, (None,), variadic=True),
}
