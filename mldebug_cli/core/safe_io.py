"""Reading only regular files, and writing reports that never land on an input.

Every reader opens its files with :func:`open_regular` (or :func:`read_text`/:func:`read_bytes`), and a file a
library reads for mldebug (a tokenizer folder for transformers, a Parquet file for datasets) is vetted with
:func:`require_regular` first: a device, a FIFO, a socket, a folder or a file of ``/proc`` is a one-line error
naming the file, never a read that blocks or never ends. Each file so read is remembered by identity (device,
inode) for the run, and :func:`write_output` refuses (exit 2) to write a report onto any of them. Reports are
written to a new file in the target's folder and renamed over the target, so a symlink at the output path is
replaced, never followed, and a report is on disk whole or not at all.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from mldebug_cli.core.errors import InputError, UsageError, in_one_line

PSEUDO_FILE_SYSTEMS = ("/proc/", "/sys/")  # "regular" files there are kernel interfaces, not data (/dev/shm is data)
STREAM_FOLDERS = ("/dev/", "/proc/")  # -o /dev/stdout, /proc/self/fd/1: written where they point, never renamed over
MAX_FOLDER_FILES = 100_000  # files of one input folder remembered as inputs (a folder of more is not a run log)

_inputs: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> the path it was read as


def start_run() -> None:
    """Forget the inputs of the previous command run in this process."""
    _inputs.clear()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _check(path: str | os.PathLike, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file (a {_kind(st.st_mode)})")
    real = os.path.realpath(path)
    if real.startswith(PSEUDO_FILE_SYSTEMS):
        raise InputError(f"{path}: not a regular file (a kernel file under {real[:real.index('/', 1) + 1]})")
    _inputs[(st.st_dev, st.st_ino)] = str(path)


def require_regular(path: str | os.PathLike) -> Path:
    """``path`` if it is a regular file (after symlinks), remembered as an input; else a one-line InputError.

    A missing file raises FileNotFoundError (callers say what was expected there).
    """
    _check(path, os.stat(path))
    return Path(path)


def open_regular(path: str | os.PathLike, mode: str = "rb", encoding: str | None = None, errors: str | None = None,
                 newline: str | None = None) -> IO:
    """Open a regular file for reading (``rb`` or ``r``): a FIFO is refused without blocking on it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        _check(path, os.fstat(fd))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        if "b" in mode:
            return os.fdopen(fd, "rb")
        return os.fdopen(fd, "r", encoding=encoding or "utf-8", errors=errors, newline=newline)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike) -> bytes:
    with open_regular(path) as stream:
        return stream.read()


def read_text(path: str | os.PathLike, errors: str = "strict") -> str:
    """The file as UTF-8 text; a leading byte-order mark is not part of the text."""
    with open_regular(path, "r", encoding="utf-8-sig", errors=errors) as stream:
        return stream.read()


def note_inputs(paths: Iterable[str | os.PathLike]) -> None:
    """Remember files (and every file under folders) that a library reads for mldebug as inputs of this run."""
    seen = 0
    for path in paths:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            _inputs[(st.st_dev, st.st_ino)] = str(path)
        elif stat.S_ISDIR(st.st_mode):
            for folder, _dirs, names in os.walk(os.fspath(path)):
                for name in names:
                    seen += 1
                    if seen > MAX_FOLDER_FILES:
                        return
                    try:
                        inner = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    if stat.S_ISREG(inner.st_mode):
                        _inputs[(inner.st_dev, inner.st_ino)] = os.path.join(folder, name)


def refuse_input(path: str | os.PathLike, flag: str) -> None:
    """A UsageError when ``path`` (or the file a symlink there points to) is a file this run reads."""
    for stat_call in (os.stat, os.lstat):
        try:
            st = stat_call(path)
        except (OSError, ValueError):
            continue
        read_as = _inputs.get((st.st_dev, st.st_ino))
        if read_as is not None:
            same = "" if os.path.abspath(read_as) == os.path.abspath(path) else f" ({read_as})"
            raise UsageError(f"{flag} {path}: this is an input of the run{same}; the report would overwrite it",
                             hint="write the report to another file")


def write_output(path: str | os.PathLike, write: Callable[[IO], None], flag: str = "--output", binary: bool = False) -> None:
    """Write a report to ``path`` whole or not at all, never onto an input and never through a symlink there.

    ``write`` gets a text stream (UTF-8), or a binary one with ``binary``. A character device (``/dev/null``) is
    written in place: it cannot be replaced and holds no input.
    """
    refuse_input(path, flag)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write the report ({exc.strerror})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{flag} {path}: is a folder; name a file")
    if os.path.abspath(path).startswith(STREAM_FOLDERS) or (st is not None and stat.S_ISCHR(st.st_mode)):
        _write_in_place(path, write, flag, binary)
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write the report ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            stream = raw if binary else io.TextIOWrapper(raw, encoding="utf-8", newline=None)
            write(stream)
            stream.flush()
            if not binary:
                stream.detach()
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"{flag} {path}: cannot write the report ({exc.strerror or exc})") from None
        raise


def _write_in_place(path: str | os.PathLike, write: Callable[[IO], None], flag: str, binary: bool) -> None:
    """``/dev/stdout``, ``/dev/null``, a terminal or a pipe: appended to where it is (it cannot be replaced, and a
    rename in /dev would replace the device's name); a block device or another kind of file there is refused."""
    try:
        target = os.stat(path)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write the report ({exc.strerror})") from None
    writable = stat.S_ISFIFO(target.st_mode) or stat.S_ISREG(target.st_mode) or (
        stat.S_ISCHR(target.st_mode) and (os.path.realpath(path) == os.devnull or _is_terminal(path)))
    if not writable:
        raise InputError(f"{flag} {path}: not a file, pipe or terminal mldebug writes a report to")
    with (open(path, "ab") if binary else open(path, "a", encoding="utf-8")) as stream:
        write(stream)


def _is_terminal(path: str | os.PathLike) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def long_number(text: str) -> tuple[int, int] | None:
    """(line, digits) of the first integer in ``text`` longer than Python converts, for the one-line error when a
    parser raised ValueError on it; None when there is none."""
    import re
    import sys

    limit = sys.get_int_max_str_digits()
    found = re.search(r"\d{" + str(limit + 1) + ",}", text) if limit else None
    if found is None:
        return None
    return 1 + text.count("\n", 0, found.start()), len(found.group())


def long_number_message(text: str, exc: ValueError) -> str:
    """``line N: a number of D digits, over the L mldebug reads`` (the parser's own words when no such number)."""
    import sys

    found = long_number(text)
    if found is None:
        return in_one_line(exc, 200)
    line, digits = found
    return f"line {line}: a number of {digits:,} digits, over the {sys.get_int_max_str_digits():,} mldebug reads"


def inside(folder: str | os.PathLike, paths: Iterable[Path]) -> list[Path]:
    """``paths`` found under ``folder``, each of which must stay inside it after symlinks (a run or dataset folder
    from a pull request may hold a link to any file on the machine); else a one-line InputError naming it."""
    root = os.path.realpath(folder)
    kept = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.commonpath([real, root]) != root:
            raise InputError(f"{path}: a link to {real}, outside the folder {folder}")
        kept.append(path)
    return kept


def stays_inside(folder: str | os.PathLike, path: str | os.PathLike, also: Iterable[str | os.PathLike] = ()) -> None:
    """A file a folder holds (a tokenizer's ``chat_template.jinja``, a model's ``config.json``) must resolve, symlinks
    followed, inside that folder (or one of ``also``, e.g. the hub cache its snapshot links point into): a link a pull
    request commits to ``~/.ssh/id_rsa`` is never read and shown. Else a one-line InputError naming it."""
    real = os.path.realpath(path)
    roots = [os.path.realpath(folder), *(os.path.realpath(r) for r in also)]
    if not any(os.path.commonpath([real, root]) == root for root in roots):
        raise InputError(f"{path}: a link to {real}, outside the folder {folder}",
                         hint="mldebug reads no file that a folder links to outside it; copy the file into the folder")
