"""`pip install .` is enough to run every command: what mldebug imports at run time is a runtime dependency, or an
optional extra whose absence is a one-line error (or a stated fallback) naming that extra; nothing comes from the
test extra."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from support import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PACKAGE = ROOT / "mldebug_cli"
# import name -> distribution, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml", "tomli": "tomli", "PIL": "pillow"}
# optional modules: the extra that installs them
EXTRAS = {"torch": "schedule", "matplotlib": "plot", "minijinja": "tgi", "ray": "ray", "peft": "probe", "PIL": "vision",
          "datasketch": "overlap"}
# the real frameworks, read when the user has them installed (mldebug falls back to the record of their wheels)
WHEN_INSTALLED = {"axolotl", "llamafactory", "trl"}


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()


def _third_party_imports() -> dict[str, set[Path]]:
    found: dict[str, set[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "mldebug_cli":
                    found.setdefault(top, set()).add(path)
    return found


def test_every_run_time_import_is_a_dependency_or_an_extra_the_error_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_distribution(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    test_only = {_distribution(r) for r in extras["test"]} - runtime
    imports = _third_party_imports()
    sources = "".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    assert {"transformers", "datasets", "typer"} <= set(imports)  # the scan sees the package
    for module, paths in imports.items():
        if module in EXTRAS:
            extra = EXTRAS[module]
            assert DISTRIBUTIONS.get(module, module) in {_distribution(r) for r in extras.get(extra, [])}, (module, extra)
            assert f"mldebug[{extra}]" in sources, f"{module}: no message names mldebug[{extra}]"
            continue
        if module in WHEN_INSTALLED:
            assert all("ImportError" in p.read_text(encoding="utf-8") for p in paths), (module, paths)
            continue
        distribution = DISTRIBUTIONS.get(module, module)
        assert distribution in runtime, f"{module} ({sorted(map(str, paths))[0]}) is not a runtime dependency"
        assert distribution not in test_only
