"""Record what each release of transformers, TRL, axolotl and LLaMA-Factory really has, read from its wheel.

    python tools/version_facts.py [--wheels /work/venvs/wheels] [--offline]

For every minor release of transformers from 4.46 to the newest (its first and its last patch), TRL from 0.12,
axolotl from 0.8 and LLaMA-Factory from 0.8 (the last patch of each minor, every 0.9.x), the wheel is fetched with
``pip download --no-deps`` (never installed) and read as source text with ``ast``: the fields of
``TrainingArguments``, of TRL's ``SFTConfig``/``DPOConfig``/``KTOConfig``/``ORPOConfig``/``GRPOConfig``, of axolotl's
dataset schema classes (one per RL type) and of LLaMA-Factory's argument dataclasses, with their defaults, and a
few behaviours that mldebug's tables depend on (what ``TrainingArguments.__post_init__`` does with
``warmup_ratio``, whether ``warmup_steps`` is a float, the eval strategy key's name).

Output: mldebug_cli/frameworks/keys/version-facts.json, delta-encoded (a field lists the releases where it
appears, disappears or changes its default). mldebug_cli/frameworks/versions.py reads its version boundaries from
that file; tests/frameworks/test_version_facts.py checks each stored fact against the wheel when the wheel is in
``--wheels``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from framework_keys import _classes, _fields  # noqa: E402

OUT = ROOT / "mldebug_cli" / "frameworks" / "keys" / "version-facts.json"
WHEELS = Path("/work/venvs/wheels")
# package -> (oldest minor recorded, which patches of a minor: "ends" = first and last, "last", "all")
RANGES = {"transformers": ((4, 46), "ends"), "trl": ((0, 12), "last"), "axolotl": ((0, 8), "last"),
          "llamafactory": ((0, 8), "all")}
# package -> {record name: (source files or folders in the wheel, root classes)}
CLASSES = {
    "transformers": {"TrainingArguments": (("transformers/training_args.py",), ["TrainingArguments"])},
    "trl": {name: (("trl/trainer", "trl/experimental"), [name])
            for name in ("SFTConfig", "DPOConfig", "KTOConfig", "ORPOConfig", "GRPOConfig", "RewardConfig")},
    "axolotl": {name: (("axolotl/utils/schemas", "axolotl/utils/config/models/input"), [name])
                for name in ("SFTDataset", "DPODataset", "KTODataset", "StepwiseSupervisedDataset",
                             "PretrainingDataset", "UserDefinedDPOType", "UserDefinedKTOType")},
    "llamafactory": {name: (("llamafactory/hparams",), [name])
                     for name in ("DataArguments", "FinetuningArguments", "ModelArguments")},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=Path, default=WHEELS, help="where the wheels are kept")
    parser.add_argument("--offline", action="store_true", help="use the wheels already in --wheels")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    record: dict = {"generated_by": "tools/version_facts.py", "packages": {}}
    for package, (oldest, patches) in RANGES.items():
        releases = _downloaded(package, args.wheels) if args.offline else _releases(package, oldest, patches)
        per_version = {}
        for version in releases:
            wheel = _wheel(package, version, args.wheels, args.offline)
            if wheel is None:
                print(f"{package} {version}: no wheel", file=sys.stderr)
                continue
            per_version[version] = facts_of(package, wheel)
            print(f"{package} {version}: {sum(len(c) for c in per_version[version]['classes'].values())} fields",
                  file=sys.stderr)
        record["packages"][package] = encode(per_version)
    args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {sum(len(p['versions']) for p in record['packages'].values())} releases")


def _key(version: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def _releases(package: str, oldest: tuple[int, int], patches: str) -> list[str]:
    listed = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package],
                            capture_output=True, text=True, check=True).stdout
    line = next(x for x in listed.splitlines() if x.startswith("Available versions:"))
    versions = [v.strip() for v in line.split(":", 1)[1].split(",")]
    versions = [v for v in versions if re.fullmatch(r"\d+\.\d+\.\d+", v) and _key(v)[:2] >= oldest]
    by_minor: dict[tuple, list[str]] = {}
    for v in sorted(versions, key=_key):
        by_minor.setdefault(_key(v)[:2], []).append(v)
    chosen = []
    for group in by_minor.values():
        chosen += group if patches == "all" else sorted({group[0], group[-1]}, key=_key) if patches == "ends" \
            else [group[-1]]
    return chosen


def _downloaded(package: str, folder: Path) -> list[str]:
    found = {re.sub(r"(-py3.*\.whl|\.tar\.gz)$", "", p.name).split("-")[1] for p in _archives(folder, package, "*")}
    return sorted(found, key=_key)


def _archives(folder: Path, package: str, version: str) -> list[Path]:
    """The wheel of a release, else its sdist (older axolotl releases publish only an sdist)."""
    return sorted(folder.glob(f"{package}-{version}-*.whl")) + sorted(folder.glob(f"{package}-{version}.tar.gz"))


def _wheel(package: str, version: str, folder: Path, offline: bool) -> Path | None:
    found = _archives(folder, package, version)
    if found or offline:
        return found[0] if found else None
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation", "-q",
                           "-d", str(folder), f"{package}=={version}"], capture_output=True, text=True)
    found = _archives(folder, package, version)
    return found[0] if done.returncode == 0 and found else None


def read_sources(archive_path: Path) -> dict[str, str]:
    """The .py files of a wheel (their package paths) or an sdist (its ``src/`` or top folder removed)."""
    if archive_path.name.endswith(".whl"):
        with zipfile.ZipFile(archive_path) as archive:
            return {n: archive.read(n).decode("utf-8") for n in archive.namelist() if n.endswith(".py")}
    out = {}
    with tarfile.open(archive_path) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith(".py"):
                name = member.name.split("/", 1)[1] if "/" in member.name else member.name
                name = name.removeprefix("src/")
                out[name] = archive.extractfile(member).read().decode("utf-8")
    return out


def facts_of(package: str, wheel: Path) -> dict:
    """{"classes": {record name: {field: default text}}, "behaviours": {name: value}} read from one wheel."""
    sources = read_sources(wheel)
    out: dict = {"classes": {}, "behaviours": {}}
    for record, (places, roots) in CLASSES[package].items():
        chosen = {n: t for n, t in sources.items() if any(n == p or n.startswith(p + "/") for p in places)}
        classes, _ = _classes(chosen)
        if not any(r in classes for r in roots):
            continue
        defaults = _defaults(chosen)
        out["classes"][record] = {key: _default_of(key, roots, classes, defaults) for key in _fields(roots, classes)}
    if package == "transformers":
        out["behaviours"] = transformers_behaviours(sources["transformers/training_args.py"])
    return out


def _defaults(sources: dict[str, str]) -> dict[str, dict[str, str]]:
    """class name -> field -> the default as source text ("<required>" when none)."""
    out: dict[str, dict[str, str]] = {}
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                fields = out.setdefault(node.name, {})
                for statement in node.body:
                    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                        fields[statement.target.id] = _default_text(statement.value)
    return out


def _default_text(value: ast.expr | None) -> str:
    if value is None:
        return "<required>"
    if isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] in ("field", "Field"):
        for keyword in value.keywords:
            if keyword.arg == "default":
                return ast.unparse(keyword.value)
            if keyword.arg == "default_factory":
                return f"{ast.unparse(keyword.value)}()"
        first = value.args[0] if value.args else None
        if first is None or (isinstance(first, ast.Constant) and first.value is ...):
            return "<required>"
        return ast.unparse(first)
    return ast.unparse(value)


def _default_of(key: str, roots: list[str], classes: dict, defaults: dict) -> str:
    """The default the subclass nearest the root gives ``key``."""
    seen: set[str] = set()
    queue = list(roots)
    while queue:
        name = queue.pop(0)
        if name in seen or name not in classes:
            continue
        seen.add(name)
        if key in defaults.get(name, {}):
            return defaults[name][key]
        queue += classes[name][0]
    return "<alias>"


def transformers_behaviours(source: str) -> dict:
    """What ``TrainingArguments`` does, read from training_args.py."""
    tree = ast.parse(source)
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "TrainingArguments")
    fields = {s.target.id: ast.unparse(s.annotation) for s in cls.body
              if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    post_text = ast.unparse(cls)  # __post_init__ and the validation methods it calls
    if "warmup_ratio" not in fields:
        warmup_ratio = "absent"
    elif re.search(r"self\.warmup_steps\s*=\s*self\.warmup_ratio", post_text):
        warmup_ratio = "copied-into-warmup_steps"
    else:
        warmup_ratio = "field"
    ratio_warns = bool(re.search(r"warmup_ratio.{0,200}deprecat|deprecat.{0,200}warmup_ratio", post_text, re.S))
    return {
        "warmup_ratio": warmup_ratio,
        "warmup_ratio_deprecation_warning": ratio_warns,
        "warmup_steps_type": fields.get("warmup_steps", "absent"),
        "eval_strategy_key": "eval_strategy" if "eval_strategy" in fields else "evaluation_strategy",
        "evaluation_strategy_alias": "evaluation_strategy" in fields,
    }


def encode(per_version: dict[str, dict]) -> dict:
    """Delta-encode: each class field -> [[version, default or null (gone)], ...] at the releases it changes."""
    versions = sorted(per_version, key=_key)
    classes: dict[str, dict[str, list]] = {}
    behaviours: dict[str, list] = {}
    for record in sorted({r for v in versions for r in per_version[v]["classes"]}):
        changes: dict[str, list] = {}
        last: dict[str, object] = {}
        for v in versions:
            present = per_version[v]["classes"].get(record)
            keys = set(last) | set(present or {})
            for key in sorted(keys):
                now = None if present is None else present.get(key)
                if last.get(key) != now:
                    changes.setdefault(key, []).append([v, now])
                last[key] = now
        classes[record] = changes
    for v in versions:
        for name, value in per_version[v]["behaviours"].items():
            history = behaviours.setdefault(name, [])
            if not history or history[-1][1] != value:
                history.append([v, value])
    return {"versions": versions, "classes": classes, "behaviours": behaviours}


def decode(package_record: dict, version: str) -> dict:
    """The facts of one recorded version: {"classes": {record: {field: default}}, "behaviours": {...}}."""
    out: dict = {"classes": {}, "behaviours": {}}
    for record, changes in package_record["classes"].items():
        fields = {}
        for key, history in changes.items():
            value = _at(history, version)
            if value is not None:
                fields[key] = value
        if fields:
            out["classes"][record] = fields
    out["behaviours"] = {name: _at(history, version) for name, history in package_record["behaviours"].items()}
    return out


def _at(history: list, version: str):
    value = None
    for since, now in history:
        if _key(since) <= _key(version):
            value = now
    return value


if __name__ == "__main__":
    main()
