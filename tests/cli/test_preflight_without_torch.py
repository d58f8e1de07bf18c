"""preflight where torch is not installed (it is an extra: `mldebug[schedule]`): the bundled examples give the report
they give with torch, in a process where torch cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support import FIXTURES, ROOT

EXAMPLES = ("trl/config.yaml", "axolotl/config.yml", "llama-factory/config.yaml")

# A process without torch, as an install without it looks to Python: the path finder is wrapped by a meta path finder
# that finds no torch (``import torch`` raises ModuleNotFoundError, importlib.util.find_spec("torch") is None, which
# is what transformers asks, and importlib.metadata lists no torch distribution), everything else found as before.
NO_TORCH = """
import importlib.machinery, sys

class NoTorch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] == "torch":
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)

    @staticmethod
    def find_distributions(*args, **kwargs):  # importlib.metadata: every installed distribution but torch's
        return (d for d in importlib.machinery.PathFinder.find_distributions(*args, **kwargs)
                if (d.metadata["Name"] or "").lower() != "torch")

    @staticmethod
    def invalidate_caches():
        importlib.machinery.PathFinder.invalidate_caches()

sys.meta_path[:] = [NoTorch if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
assert "torch" not in sys.modules
try:
    import torch
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("torch imported")
from mldebug_cli.cli import main

codes = []
for config, out in zip(sys.argv[1::2], sys.argv[2::2]):
    sys.argv = ["mldebug", "preflight", config, "-f", "json", "-o", out]
    try:
        main()
    except SystemExit as exit:
        codes.append(int(exit.code or 0))
    else:
        codes.append(0)
print("EXIT", codes, "TORCH", "torch" in sys.modules)
"""


@pytest.mark.slow  # a fresh interpreter and three preflights: 6-10 CPU s
def test_preflight_runs_without_torch_and_gives_the_report_it_gives_with_it(tmp_path, monkeypatch):
    """Where torch is not installed, each bundled example's preflight runs to its report: the same exit code and
    findings as with torch, and the schedule's engine says it ran the built-in formulas because torch is not installed.
    At the transformers releases whose schedulers the formulas are held equal to (frameworks.hf.schedulers
    EXACT_RELEASES, the releases CI installs) the rest of the JSON is the same byte for byte, every LR too."""
    import transformers
    from typer.testing import CliRunner

    from mldebug_cli.cli import app
    from mldebug_cli.frameworks.hf.schedulers import EXACT_RELEASES

    monkeypatch.chdir(ROOT)
    args = []
    for n, example in enumerate(EXAMPLES):
        args += [f"fixtures/preflight/{example}", str(tmp_path / f"{n}.json")]
    result = subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-1000:] + result.stderr[-3000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("EXIT"))
    assert line.endswith("TORCH False"), line  # never imported, not even blocked half-way
    codes = json.loads(line.split("EXIT ", 1)[1].split(" TORCH")[0])
    runner = CliRunner()
    for n, example in enumerate(EXAMPLES):
        assert (FIXTURES / "preflight" / example).exists()
        here = runner.invoke(app, ["preflight", f"fixtures/preflight/{example}", "-f", "json"], catch_exceptions=False)
        assert codes[n] == here.exit_code, (example, codes[n], here.exit_code)
        without, with_torch = json.loads((tmp_path / f"{n}.json").read_text()), json.loads(here.stdout)
        assert without["findings"] == with_torch["findings"] != [], example  # planted findings: not an empty run
        schedule = next(s for s in without["sections"] if s["command"] == "lr-plot")
        assert schedule["engine"] == "built-in formulas", (example, schedule["engine"])
        assert schedule["context"]["engine"].startswith("built-in formulas (torch is not installed; pip install "
                                                        "'mldebug[schedule]'"), schedule["context"]["engine"]
        if transformers.__version__ in EXACT_RELEASES:
            for report in (without, with_torch):
                schedule = next(s for s in report["sections"] if s["command"] == "lr-plot")
                del schedule["engine"], schedule["context"]["engine"]
            assert without == with_torch, example
