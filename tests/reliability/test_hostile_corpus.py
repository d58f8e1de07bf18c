"""Issue 36's hostile corpus through the real CLI, each case in a child process (a hang fails the test): every case
handled (exit 0, 1 or 2 with an ``Error:`` line or findings), no traceback, no "internal error", no input modified,
nothing outside the allowed folders shown, no workflow command under GitHub Actions, memory under 2 GiB. The cases
are benchmarks/bench_hostile.py's ``third_pass_cases`` (the benchmark prints their times and peaks); the probe cases
are held by tests/reliability/test_model_loading.py and test_bad_values_third_pass.py."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from outcomes import run_cli_process
from support import ROOT

_spec = importlib.util.spec_from_file_location("bench_hostile", ROOT / "benchmarks" / "bench_hostile.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _digest(paths: list[Path]) -> dict[str, str]:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()
             and not f.is_symlink()]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def _case_ids() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        return [f"{reader} / {hostile}" for reader, hostile, *_ in bench.third_pass_cases(Path(scratch) / "c",
                                                                                           with_probe=False)]


CASE_IDS = _case_ids()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-third-pass") / "cases"
    return {f"{reader} / {hostile}": (argv, keep, secret) for reader, hostile, argv, keep, secret
            in bench.third_pass_cases(folder, with_probe=False)}, folder


@pytest.mark.parametrize("case", CASE_IDS)
def test_every_hostile_case_is_handled(corpus, case):
    cases, folder = corpus
    argv, keep, secret = cases[case]
    before = _digest(keep)
    code, stdout, stderr, peak = run_cli_process(*argv, cwd=folder, env={"GITHUB_ACTIONS": "true"})
    assert code in (0, 1, 2), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert code != 2 or any(line.startswith("Error: ") for line in stderr.splitlines()), stderr
    assert _digest(keep) == before
    assert secret is None or secret not in stdout + stderr
    # mldebug's own annotations (``::error file=...``) are the github format; no command may come from the data
    assert not any(line.lstrip().startswith(("::add-mask", "::set-env", "::error::"))
                   for line in stdout.replace("\r", "\n").splitlines())
    assert not (folder / "CODE-RAN").exists()
    assert peak is None or peak < 2048, peak
