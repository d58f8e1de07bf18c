"""TGI's minijinja renders in a long-lived child process, so a runaway template cannot take mldebug down.

minijinja bounds the instructions a render runs (fuel) but not the memory it takes, and it aborts the
whole process when an allocation fails, so a memory limit inside mldebug's own process would kill it.
Each render therefore runs in a child process (started on the first render, then reused: a new interpreter
per render would cost about 50 ms, a request to the running child costs about 0.1 ms) that imports only
the standard library, ``render/chat.py`` and minijinja. The child renders under ``chat.memory_cap`` and the
parent kills it when a render outlives the wall-clock limit; both limits and their wording are chat.py's
``DEFAULT_LIMITS``. A child that dies mid-render becomes an error naming the limit it hit, or how it died.

Requests and replies are JSON (never pickle: the child runs hostile templates), each framed by its length.
Off POSIX (no ``poll`` on pipes) the same render runs in-process, bounded by fuel only.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import struct
import sys
import threading
from datetime import datetime
from typing import Any

from mldebug_cli.render import chat
from mldebug_cli.render.chat import MIB, RenderLimitError, memory_cap

STARTUP_SECONDS = 60.0  # a cold interpreter on a busy machine; a render has its own, shorter limit
EXIT_SECONDS = 5.0  # for a child that closed its pipe to finish dying, and for one asked to stop
_HEADER = struct.Struct(">Q")
# The child's entry point: the parent's import path, then this module's serve(); nothing else is imported.
_CHILD_MAIN = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); from mldebug_cli.render.tgi_process import serve; serve()"
)


class TemplateRaised(Exception):
    """The template called ``raise_exception()``; the message is the template's."""


class MinijinjaError(Exception):
    """minijinja refused or failed to render the template (its message)."""


class RenderProcessError(Exception):
    """The render process could not start, or died for a reason other than a render limit."""


def render(source: str, context: dict[str, Any], *, now: datetime, fuel: int) -> str:
    """``source`` rendered with ``context`` in TGI's minijinja environment, within ``chat.DEFAULT_LIMITS``."""
    limits = chat.DEFAULT_LIMITS
    request = {"source": source, "context": context, "now": now.isoformat(), "fuel": fuel,
               "memory_bytes": limits.memory_bytes, "output_chars": limits.output_chars}  # fmt: skip
    if os.name != "posix":
        import minijinja

        return _text(render_request(request, minijinja), limits)
    with _lock:
        reply = _worker().exchange(json.dumps(request, ensure_ascii=False).encode(), limits.seconds)
    return _text(reply, limits)


def _text(reply: dict[str, Any], limits: chat.RenderLimits) -> str:
    if "text" in reply:
        return reply["text"]
    if "raised" in reply:
        raise TemplateRaised(reply["raised"])
    if "failed" in reply:
        raise MinijinjaError(reply["failed"])
    if "limit" in reply:
        raise RenderLimitError(LIMIT_WORDS[reply["limit"]].format(fuel=reply["fuel"]))
    if "produced" in reply:
        raise RenderLimitError(f"the template produced {reply['produced']:,} characters, more than the "
                               f"{limits.output_chars // MIB} MiB render limit")  # fmt: skip
    if "memory" in reply:
        raise RenderLimitError(f"the template used more than the {limits.memory_bytes // MIB} MiB render memory limit")
    if "timeout" in reply:
        raise RenderLimitError(f"the template exceeded the {limits.seconds:g} s render limit")
    raise RenderProcessError(reply["died"])


# --- the parent's side ---------------------------------------------------------------------------------------

_lock = threading.Lock()  # one request at a time on the pipes
_current: _Worker | None = None


def _worker() -> _Worker:
    """The running child of this process, started if there is none (or it died, or was inherited by a fork)."""
    global _current
    if _current is None or not _current.usable():
        if _current is None:
            atexit.register(_stop_current)
        else:
            _current.stop()
        _current = _Worker()
    return _current


def _stop_current() -> None:
    if _current is not None:
        _current.stop()


class _Worker:
    """One child process and its two pipes; ``exchange`` turns a dead or hung child into a reply."""

    def __init__(self) -> None:
        import subprocess
        import tempfile

        self.owner = os.getpid()
        # A file, not a pipe: read only after a death, it can never fill up and block the child.
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115  (lives as long as the child)
        to_child, self.requests = os.pipe()
        self.replies, from_child = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD_MAIN, json.dumps(sys.path)],
                stdin=to_child, stdout=from_child, stderr=self.stderr, close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            self._close_pipes()
            self.stderr.close()
            raise RenderProcessError(f"the TGI render process could not start ({exc})") from None
        finally:
            os.close(to_child)
            os.close(from_child)
        greeting = self.exchange(None, STARTUP_SECONDS)
        if "ready" not in greeting:
            raise RenderProcessError(
                greeting.get("died") or f"the TGI render process did not start in {STARTUP_SECONDS:g} s"
            )

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def exchange(self, request: bytes | None, seconds: float) -> dict[str, Any]:
        """Send ``request`` (None: just wait for the child's greeting), return its reply within ``seconds``."""
        try:
            if request is not None:
                _write_frame(self.requests, request)
            replied = select.poll()
            replied.register(self.replies, select.POLLIN)
            if not replied.poll(seconds * 1000):
                self.stop(kill=True)
                return {"timeout": True}
            return json.loads(_read_frame(self.replies))
        except (EOFError, OSError):
            return self._death()
        except BaseException:  # Ctrl-C mid-render: the reply left in the pipe would answer the next request
            self.stop(kill=True)
            raise

    def _death(self) -> dict[str, Any]:
        """The child closed its pipe: why, as a reply (its abort message tells an allocation failure)."""
        self._reap(kill=False)
        self.stderr.seek(0)
        said = self.stderr.read()[-8192:].decode("utf-8", "replace")
        self.stderr.close()
        if "memory allocation of" in said or "MemoryError" in said:
            return {"memory": True}
        code = self.process.returncode
        how = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit status {code}"
        last = said.strip().splitlines()[-1:]
        return {"died": f"the TGI render process died ({how}{': ' + last[0][:200] if last else ''})"}

    def stop(self, kill: bool = False) -> None:
        """End the child (it exits on end of input; killed if asked) unless it belongs to the process we forked from."""
        if self.owner == os.getpid():
            self._reap(kill)
            self.stderr.close()

    def _reap(self, kill: bool) -> None:
        import subprocess

        self._close_pipes()
        if kill:
            self.process.kill()
        try:
            self.process.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:  # a child that ignores end of input
            self.process.kill()
            self.process.wait()

    def _close_pipes(self) -> None:
        """Closed once: a descriptor number closed twice may by then belong to another file."""
        for fd in (self.requests, self.replies):
            if fd >= 0:
                os.close(fd)
        self.requests = self.replies = -1


def _write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(fd: int) -> bytes:
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
    return _read_exactly(fd, size)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


# --- the child's side ----------------------------------------------------------------------------------------


def serve() -> None:
    """The child's loop: one request in, one reply out, until the parent closes its end of the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for mldebug, which then closes the pipe
    requests, replies = os.dup(0), os.dup(1)
    os.dup2(2, 1)  # nothing printed by accident can corrupt a reply
    import minijinja

    _write_frame(replies, b'{"ready": true}')
    while True:
        try:
            request = json.loads(_read_frame(requests))
        except EOFError:
            return
        _write_frame(replies, json.dumps(render_request(request, minijinja), ensure_ascii=False).encode())


def render_request(request: dict[str, Any], minijinja: Any) -> dict[str, Any]:
    """One render as TGI's router sets it up (see render/tgi.py), as a reply."""
    clock = datetime.fromisoformat(request["now"])
    env = minijinja.Environment(fuel=request["fuel"], pycompat=True)
    env.add_function("raise_exception", _raise_exception)
    env.add_function("strftime_now", lambda fmt: clock.strftime(str(fmt)))
    try:
        with memory_cap(request["memory_bytes"]):
            text = env.render_str(request["source"], **request["context"])
    except _Raised as exc:
        return {"raised": str(exc)}
    except MemoryError:
        return {"memory": True}
    except minijinja.TemplateError as exc:
        limit = _limit_hit(exc)
        return {"limit": limit, "fuel": request["fuel"]} if limit else {"failed": str(exc)}
    except Exception as exc:  # any error raised inside the template is the template's error
        return {"failed": f"{type(exc).__name__}: {exc}"}
    if len(text) > request["output_chars"]:
        return {"produced": len(text)}
    return {"text": text}


# minijinja's own limits, in mldebug's words (its wording changes between releases: 2.x "repeated string is too
# large", 3.x "engine ran out of fuel" for the same template).
LIMIT_WORDS = {
    "fuel": "the template ran more than minijinja's budget of {fuel:,} instructions",
    "size": "the template built a string or sequence larger than minijinja allows",
    "recursion": "the template recursed deeper than minijinja allows",
}


def _limit_hit(exc: Any) -> str | None:
    """Which of minijinja's limits stopped the render, if one did (by its error kind, else its message)."""
    text = str(exc).split("\n", 1)[0]
    if getattr(exc, "kind", None) == "OutOfFuel" or "out of fuel" in text:
        return "fuel"
    if "too large" in text or "too many elements" in text:
        return "size"
    if "recursion limit" in text:
        return "recursion"
    return None


class _Raised(Exception):
    """``raise_exception()`` called by the template."""


def _raise_exception(message: Any = "") -> None:
    raise _Raised(str(message))
