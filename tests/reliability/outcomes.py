"""What every bad-input test asserts: the exact finding or the one-line error, and inputs left byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import ROOT

HOSTILE = ROOT / "fixtures" / "hostile"
HANG_GUARD_SECONDS = 180  # a subprocess that runs longer has hung: the test fails instead of CI stalling

_runner = CliRunner()
_CHILD = """\
import sys
{prelude}
from mldebug_cli.cli import main


def peak_kib():
    # VmHWM is this process image's own peak; ru_maxrss also counts the parent's pages that a vfork-ed
    # child shares until exec (the pytest process, over 1 GiB late in the suite).
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


sys.argv = ["mldebug", *{args!r}]
try:
    main()
finally:
    sys.stderr.write(f"\\nPEAK_RSS_KIB {{peak_kib()}}\\n")
"""


def run_cli(*args: object):
    """mldebug in this process (tokenizers stay cached between tests)."""
    return _runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def run_cli_process(*args: object, env: dict[str, str] | None = None, cwd: Path | None = None, prelude: str = "",
                    timeout: float = HANG_GUARD_SECONDS):
    """mldebug in a child process (a hang fails the test): (exit code, stdout, stderr, peak RSS in MiB).

    ``prelude`` is Python run before the CLI, e.g. to shorten a render limit. The peak is None when the
    child was killed before it could report it.
    """
    code = _CHILD.format(prelude=prelude, args=[str(a) for a in args])
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env,
                          cwd=cwd or ROOT, timeout=timeout)
    stderr, found, peak = done.stderr.rpartition("PEAK_RSS_KIB ")
    if not found:
        return done.returncode, done.stdout, done.stderr.strip(), None
    return done.returncode, done.stdout, stderr.strip(), int(peak) // 1024


def assert_one_line_error(exit_code: int, stderr: str, message: str, hint: str | None = None) -> None:
    """Exit 2, ``Error: <message>`` on one line (and the hint), and no traceback."""
    lines = stderr.strip().splitlines()
    assert exit_code == 2
    assert lines[0] == f"Error: {message}"
    assert lines[1:] == ([f"Hint: {hint}"] if hint else [])


def findings(stdout: str) -> list[tuple[str, str, int | None, int | None, str]]:
    """(code, name, row, line, message) of each finding in a JSON report."""
    return [
        (f["code"], f["name"], f["location"].get("row"), f["location"].get("line"), f["message"])
        for f in json.loads(stdout)["findings"]
    ]


@contextmanager
def unchanged(*paths: Path) -> Iterator[None]:
    """Assert every file under ``paths`` is byte for byte the same after the block (and no file was added)."""
    before = _digests(paths)
    yield
    assert _digests(paths) == before


def _digests(paths: tuple[Path, ...]) -> dict[Path, str]:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()]
    return {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
