"""Rendering conversations exactly as ``apply_chat_template`` does, with transformers' own renderer, within limits.

transformers compiles the template in its sandboxed Jinja environment and drops ``None``-valued
message keys first; we do the same, and also return the ``{% generation %}`` character spans.

Templates come from the hub and rows from the web, so every render is bounded (see SECURITY.md):

- transformers' own code builds the environment (same options, filters, globals and extensions), but of
  class ``BoundedSandbox``, an ``ImmutableSandboxedEnvironment`` whose ``*``, ``**``, ``+`` and ``~`` refuse
  to build a string or list longer than ``MAX_BUILT_LENGTH`` or an integer wider than ``MAX_INT_BITS``:
  ``'a' * 10**10`` and ``9 ** 9 ** 9`` are single C-level operations no timer can interrupt (intercepting
  them also stops Jinja from computing them at compile time), and a string doubled in a loop is stopped
  at the first result over the limit;
- a wall-clock limit (``SIGALRM``, main thread only) stops loops;
- on Linux, ``RLIMIT_DATA`` caps how much the process may grow during the render (main thread only);
- the rendered text may not exceed ``RenderLimits.output_chars``.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import in_one_line
from mldebug_cli.sources.template_bounds import bounded_parse

GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")
MIB = 2**20
MAX_BUILT_LENGTH = 32 * MIB  # characters or items one `*` may produce
MAX_INT_BITS = 2**20  # one `*` or `**` on integers; bigger numbers take minutes in C
TIMEOUTS_BEFORE_GIVING_UP = 2  # a template that hung this often is not rendered again in this run


class TemplateRenderError(Exception):
    """The chat template raised while rendering (its own message is kept), or exceeded a render limit."""


class RenderLimitError(TemplateRenderError):
    """The template exceeded one of the limits mldebug renders within."""


@dataclass(frozen=True)
class RenderLimits:
    """What one render may spend."""

    seconds: float = 10.0
    output_chars: int = 32 * MIB
    memory_bytes: int = 1024 * MIB  # growth of the process's data segment during the render


DEFAULT_LIMITS = RenderLimits()


@dataclass(frozen=True)
class RenderedChat:
    text: str
    generation_spans: tuple[tuple[int, int], ...] = ()


class ChatRenderer:
    """Renders messages with one template and one tokenizer's special tokens."""

    def __init__(
        self,
        template: str,
        special_tokens: dict[str, Any],
        extra_kwargs: dict[str, Any] | None = None,
        limits: RenderLimits | None = None,
    ):
        self.template = template
        self.has_generation_markers = bool(GENERATION_TAG.search(template))
        self.kwargs = {**special_tokens, **(extra_kwargs or {})}
        self.limits = limits or DEFAULT_LIMITS

    @classmethod
    def for_tokenizer(cls, tokenizer, template: str, extra_kwargs: dict[str, Any] | None = None) -> ChatRenderer:
        return cls(template, dict(tokenizer.special_tokens_map), extra_kwargs)

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any] | None = None,
        add_generation_prompt: bool = False,
        with_generation_spans: bool = False,
    ) -> RenderedChat:
        if _timeouts[self.template] >= TIMEOUTS_BEFORE_GIVING_UP:
            raise RenderLimitError(f"not rendered: the template exceeded the {self.limits.seconds:g} s render limit "
                                   f"{TIMEOUTS_BEFORE_GIVING_UP} times already")
        cleaned = [{k: v for k, v in m.items() if v is not None} for m in messages]
        spans_wanted = with_generation_spans and self.has_generation_markers
        rendered, spans = self._render_within_limits(
            conversations=[cleaned],
            tools=tools,
            chat_template=self.template,
            return_assistant_tokens_mask=spans_wanted,
            add_generation_prompt=add_generation_prompt,
            **self.kwargs,
        )
        text = rendered[0]
        if len(text) > self.limits.output_chars:
            raise RenderLimitError(
                f"the template produced {len(text):,} characters, more than the "
                f"{self.limits.output_chars // MIB} MiB render limit"
            )
        return RenderedChat(text, tuple(tuple(s) for s in spans[0]) if spans_wanted else ())

    def render_texts(self, conversations: list[list[dict[str, Any]]], add_generation_prompt: bool = False,
                     continue_final_message: bool = False) -> list[str]:
        """Several conversations in one template call: the time and memory guards are set up once for all.

        Raises TemplateRenderError when any of them fails; render them one by one then to know which.
        """
        if not conversations:
            return []
        cleaned = [[{k: v for k, v in m.items() if v is not None} for m in messages] for messages in conversations]
        texts, _ = self._render_within_limits(conversations=cleaned, chat_template=self.template,
                                              add_generation_prompt=add_generation_prompt,
                                              continue_final_message=continue_final_message, **self.kwargs)
        if any(len(t) > self.limits.output_chars for t in texts):
            raise RenderLimitError("a conversation exceeds the render limit")
        return list(texts)

    def _render_within_limits(self, **kwargs: Any):
        """transformers' ``render_jinja_template(**kwargs)`` under the time and memory limits; errors described."""
        alarm = _Alarm(self.limits.seconds)
        try:
            # The alarm is innermost so that the clean-up around it cannot be interrupted by it.
            with _bounded_transformers() as render_jinja_template, memory_cap(self.limits.memory_bytes), alarm:
                return render_jinja_template(**kwargs)
        except _Timeout:
            alarm.disarm()
            _timeouts[self.template] += 1
            raise RenderLimitError(f"the template exceeded the {self.limits.seconds:g} s render limit") from None
        except RenderLimitError:
            raise
        except MemoryError:
            raise RenderLimitError(
                f"the template used more than the {self.limits.memory_bytes // MIB} MiB render memory limit"
            ) from None
        except RecursionError:
            raise TemplateRenderError("the template recursed too deeply") from None
        except Exception as exc:  # any error raised inside the template is the template's error
            raise TemplateRenderError(_describe(exc)) from None


def template_syntax_error(template: str) -> str | None:
    """Why the template does not compile (with its line), or None when it does."""
    import jinja2

    try:
        with _bounded_transformers():
            compile_bounded(template)
    except jinja2.TemplateSyntaxError as exc:  # unknown filters and tests (TemplateAssertionError) too
        return f"line {exc.lineno}: {in_one_line(exc.message or exc)}"
    return None


def _describe(exc: BaseException) -> str:
    text = in_one_line(exc, 300)
    lineno = getattr(exc, "lineno", None)
    if lineno and type(exc).__name__ == "TemplateSyntaxError":
        text = f"line {lineno}: {text}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_timeouts: Counter[str] = Counter()  # render timeouts per template source in this process


# --- transformers' renderer, compiling with the bounded sandbox ----------------------------------------------


@contextmanager
def _bounded_transformers() -> Iterator[Any]:
    """transformers' ``render_jinja_template``, its compiler building BoundedSandbox environments until exit."""
    from transformers.utils import chat_template_utils as ctu

    saved = ctu._compile_jinja_template, ctu.ImmutableSandboxedEnvironment
    vars(ctu).update(_compile_jinja_template=compile_bounded, ImmutableSandboxedEnvironment=bounded_sandbox_class())
    try:
        yield ctu.render_jinja_template
    finally:
        vars(ctu).update(_compile_jinja_template=saved[0], ImmutableSandboxedEnvironment=saved[1])


@functools.lru_cache(maxsize=32)
def compile_bounded(template: str):
    """transformers' own environment set-up (options, filters, globals, extensions); call inside _bounded_transformers."""
    from transformers.utils import chat_template_utils as ctu

    return bounded_parse(ctu._cached_compile_jinja_template, template)


@functools.cache
def concat_checking_code_generator() -> type:
    """A Jinja code generator compiling ``a ~ b`` to ``environment.checked_length('~', a ~ b)``.

    Jinja routes ``~`` through no sandbox hook, so an environment using this generator must define
    ``checked_length(operator, value)``.
    """
    from jinja2.compiler import CodeGenerator

    class BoundedCodeGenerator(CodeGenerator):
        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.checked_length('~', ")
            super().visit_Concat(node, frame)
            self.write(")")

    return BoundedCodeGenerator


@functools.cache
def bounded_sandbox_class() -> type:
    """Defined on first use so that importing this module does not import jinja2."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        """transformers' sandbox, refusing ``*``, ``**``, ``+`` and ``~`` results too large to build."""

        intercepted_binops = frozenset({"*", "**", "+"})
        code_generator_class = concat_checking_code_generator()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            bound_width_filters(self.filters, MAX_BUILT_LENGTH, RenderLimitError)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "+" and type(left) is str and type(right) is str:  # the common case, kept cheap
                return self.checked_length(operator, left + right)
            problem = _oversized_binop(operator, left, right)
            if problem:
                raise RenderLimitError(problem)
            return self.checked_length(operator, super().call_binop(context, operator, left, right))

        @staticmethod
        def checked_length(operator: str, value: Any) -> Any:
            """``value``, unless it is a string or list longer than MAX_BUILT_LENGTH (doubling in a loop)."""
            if isinstance(value, (str, list, tuple)) and len(value) > MAX_BUILT_LENGTH:
                raise RenderLimitError(_built_too_long(operator, value, len(value), "built"))
            return value

    return BoundedSandbox


def bound_width_filters(filters: dict[str, Any], limit: int, error: type[Exception]) -> None:
    """Jinja's ``indent`` and ``center`` build their padding in one C call no timer or memory check can interrupt
    (``indent(10**9)`` asks for a GiB at once): refuse a width whose result would pass ``limit`` characters first."""
    indent, center = filters["indent"], filters["center"]

    def checked_indent(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> Any:
        pad = len(width) if isinstance(width, str) else width
        if _is_int(pad) and pad * (str(s).count("\n") + 1) > limit:
            raise error(f"'indent' would build {pad * (str(s).count(chr(10)) + 1):,} characters (limit {limit:,})")
        return indent(s, width, first, blank)

    def checked_center(value: Any, width: Any = 80) -> Any:
        if _is_int(width) and width > limit:
            raise error(f"'center' would build {width:,} characters (limit {limit:,})")
        return center(value, width)

    filters["indent"], filters["center"] = checked_indent, checked_center


def _oversized_binop(operator: str, left: Any, right: Any) -> str | None:
    """Why ``left operator right`` would be too big to compute, or None (``+`` at most doubles: checked after)."""
    if _is_int(left) and _is_int(right) and operator in ("*", "**"):
        bits = left.bit_length() + right.bit_length() if operator == "*" else _power_bits(left, right)
        if bits > MAX_INT_BITS:
            return f"the integer result of '{operator}' would have about {bits:,} bits (limit {MAX_INT_BITS:,})"
        return None
    if operator != "*":
        return None
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and _is_int(count) and len(sequence) * count > MAX_BUILT_LENGTH:
            return _built_too_long(operator, sequence, len(sequence) * count, "would build")
    return None


def _built_too_long(operator: str, value: Any, length: int, verb: str) -> str:
    unit = "characters" if isinstance(value, str) else "items"
    return f"'{operator}' {verb} {length:,} {unit} (limit {MAX_BUILT_LENGTH:,})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _power_bits(base: int, exponent: int) -> int:
    return 0 if exponent < 0 or abs(base) <= 1 else base.bit_length() * exponent


# --- the wall-clock and memory limits ---------------------------------------------------------------------


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` inside Jinja or transformers swallows it."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Alarm:
    """A one-shot SIGALRM timer for the block, restoring any timer and handler that were there before.

    It does nothing off the main thread or when SIGALRM belongs to non-Python code. ``disarm`` is
    idempotent so a caller can finish the clean-up when the alarm fires inside ``__exit__`` itself.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False
        self.previous_handler: Any = None
        self.previous_timer = (0.0, 0.0)
        self.started = 0.0

    def __enter__(self) -> _Alarm:
        # Off the main thread signals cannot be handled; a handler installed outside Python could not be put back.
        if not (_in_main_thread() and hasattr(signal, "setitimer")) or signal.getsignal(signal.SIGALRM) is None:
            return self
        self.started = time.monotonic()
        self.previous_handler = signal.signal(signal.SIGALRM, _raise_timeout)
        self.armed = True
        self.previous_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()

    def disarm(self) -> None:
        if not self.armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.armed = False
        signal.signal(signal.SIGALRM, self.previous_handler)
        delay, interval = self.previous_timer
        if delay > 0:  # someone else's timer was running: give it back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(delay - (time.monotonic() - self.started), 1e-6), interval)


def _raise_timeout(signum: int, frame: Any) -> None:
    raise _Timeout


@contextmanager
def memory_cap(budget: int) -> Iterator[None]:
    """Lower RLIMIT_DATA to the current data size plus ``budget`` for the block (Linux, main thread)."""
    current = _data_bytes()
    if current is None or not _in_main_thread():
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = min(x for x in (current + budget, soft, hard) if x != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _data_bytes() -> int | None:
    """The process's data segment (heap and private anonymous mappings) from /proc, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return int(os.pread(_statm(os.getpid()), 128, 0).split()[5]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def _statm(pid: int) -> int:
    """One open descriptor per process: re-reading it costs 4 us where opening the file costs 30 us."""
    return os.open(f"/proc/{pid}/statm", os.O_RDONLY)
