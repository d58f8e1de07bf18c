"""Record what each release of transformers, TRL, axolotl and LLaMA-Factory really has, read from its wheel.

    python tools/version_facts.py [--wheels /work/venvs/wheels] [--offline] [--only tokenizers|pins]

The one tool behind every version table mldebug ships. For every minor release of transformers from 4.46 to the
newest and of TRL from 0.12 (the first and the last patch of each), axolotl from 0.5 (the first release on PyPI;
the last patch of each minor) and LLaMA-Factory from 0.8 (every patch), the wheel (an sdist where a release has no
wheel: axolotl before 0.17) is fetched with ``pip download --no-deps`` (never installed) and read as source text
with ``ast``:

- the config classes mldebug checks a config file against, with each field's type (``bool``, ``int``, ...,
  the values of a closed set: enums of the package become their values) and its default as source text:
  ``TrainingArguments`` and ``Seq2SeqTrainingArguments`` (its own fields); TRL's ``SFTConfig``, ``DPOConfig``, ``KTOConfig``,
  ``ORPOConfig``, ``GRPOConfig``, ``RewardConfig`` (their own fields: the TrainingArguments base is transformers')
  and the ``trl`` script's ``ScriptArguments``, ``DatasetMixtureConfig``, ``ModelConfig``, ``GRPOScriptArguments``;
  axolotl's ``AxolotlInputConfig``, ``DeprecatedParameters`` and its dataset schema classes; LLaMA-Factory's
  argument dataclasses (their own fields: the Seq2SeqTrainingArguments base is transformers');
- where each class was read from (axolotl moved its schema from ``utils/config/models/input/v0_4_1`` to
  ``utils/schemas`` in 0.8; TRL moved KTO and ORPO into ``trl/experimental``);
- a few behaviours mldebug's tables depend on: what ``TrainingArguments.__post_init__`` does with ``warmup_ratio``,
  whether ``warmup_steps`` is a float, the eval strategy key's name, which classes axolotl's ``datasets`` union
  validates an entry with.

- how ``AutoTokenizer`` builds a tokenizer (``tokenizers`` behaviours, per transformers release): which tokenizer
  classes rebuild their pre-tokenizer from their own defaults instead of taking tokenizer.json's (4.x: none, the
  fast class loads the file as it is; 5.x: ``LlamaTokenizer`` hardcodes Metaspace, ``GPT2Tokenizer`` ByteLevel,
  ...), and whether ``AutoTokenizer`` loads ``TokenizersBackend`` when a declared ``LlamaTokenizer`` meets a
  ByteLevel tokenizer.json (the guard transformers added in 5.22);
- each framework's pin on transformers (``Requires-Dist`` of its wheel's METADATA, markers and extras left out), in
  ``pins``: for the recorded releases of LLaMA-Factory, TRL and axolotl and the releases of Unsloth and torchtune
  mldebug checks against (``PINNED``).

``--only tokenizers`` or ``--only pins`` rewrites that part of the existing record alone (the wheels it needs only).

Output: mldebug_cli/frameworks/keys/version-facts.json. Delta-encoded: a field lists only the releases where it
appears, disappears or changes (its default or its type), so a key that lives through 60 releases unchanged is
one entry. mldebug_cli/frameworks/record.py reads it at run time; tests/frameworks/test_version_facts.py checks each
stored fact against the wheel when the wheel is in ``--wheels`` and that mldebug's tables equal the record.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mldebug_cli.frameworks.schema import key_type  # noqa: E402

OUT = ROOT / "mldebug_cli" / "frameworks" / "keys" / "version-facts.json"
WHEELS = Path("/work/venvs/wheels")
# package -> (oldest minor recorded, which patches of a minor: "ends" = first and last, "last", "all")
RANGES = {"transformers": ((4, 46), "ends"), "trl": ((0, 12), "ends"), "axolotl": ((0, 5), "last"),
          "llamafactory": ((0, 8), "all")}
_TRL_CONFIGS = ("SFTConfig", "DPOConfig", "KTOConfig", "ORPOConfig", "GRPOConfig", "RewardConfig")
_AXOLOTL = ("axolotl/utils/schemas", "axolotl/utils/config/models/input")
# package -> {record name: (source files or folders in the wheel, in order of preference)}
CLASSES = {
    "transformers": {"TrainingArguments": ("transformers/training_args.py",),
                     # its own fields (the rest are TrainingArguments')
                     "Seq2SeqTrainingArguments": ("transformers/training_args_seq2seq.py",)},
    "trl": {**{name: ("trl/trainer", "trl/experimental") for name in _TRL_CONFIGS},
            "ScriptArguments": ("trl/scripts/utils.py", "trl/utils.py"),
            "DatasetMixtureConfig": ("trl/scripts/utils.py",),
            "ModelConfig": ("trl/trainer/model_config.py",),
            "GRPOScriptArguments": ("trl/scripts/grpo.py", "trl/scripts/utils.py")},
    "axolotl": {name: _AXOLOTL for name in (
        "AxolotlInputConfig", "DeprecatedParameters", "SFTDataset", "DPODataset", "KTODataset",
        "StepwiseSupervisedDataset", "SyntheticDataset", "PretrainingDataset", "UserDefinedDPOType",
        "UserDefinedKTOType")},
    "llamafactory": {name: ("llamafactory/hparams",) for name in (
        "ModelArguments", "DataArguments", "TrainingArguments", "FinetuningArguments", "GeneratingArguments")},
}
# where each package's enums live (a field typed with one takes only its values)
ENUMS = {"transformers": ("transformers/training_args.py", "transformers/trainer_utils.py", "transformers/debug_utils.py"),
         "trl": ("trl/trainer", "trl/experimental", "trl/scripts"),
         "axolotl": _AXOLOTL,
         "llamafactory": ("llamafactory/hparams", "llamafactory/extras/constants.py")}
# TrainingArguments' __post_init__ turns ``SchedulerType | str`` text into the enum: only its values pass
TEXT_BECOMES_ENUM = {"transformers"}
# framework -> the releases whose transformers pin is recorded besides the record's own releases of it
PINNED = {"unsloth": ("2026.10.9",), "torchtune": ("0.6.1",)}
PIN_PACKAGES = ("llamafactory", "trl", "axolotl", "unsloth", "torchtune")
SKIPPED_ATTRIBUTES = {"model_config"}  # pydantic's own settings, not a config key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=Path, default=WHEELS, help="where the wheels are kept")
    parser.add_argument("--offline", action="store_true", help="use the wheels already in --wheels")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="wheels read at once")
    parser.add_argument("--only", choices=("tokenizers", "pins"), help="rewrite this part of the record alone")
    args = parser.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    if args.only:
        record = json.loads(args.out.read_text(encoding="utf-8"))
        if args.only == "tokenizers":
            _update_tokenizers(record, args.wheels, args.offline)
        else:
            record["pins"] = _pins(record, args.wheels, args.offline)
        args.out.write_text(dumps(record), encoding="utf-8")
        print(f"{args.out}: {args.only} updated")
        return
    record: dict = {"generated_by": "tools/version_facts.py", "packages": {}}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for package, (oldest, patches) in RANGES.items():
            releases = _downloaded(package, args.wheels) if args.offline else _releases(package, oldest, patches)
            wheels = {v: _wheel(package, v, args.wheels, args.offline) for v in releases}
            for version in [v for v, w in wheels.items() if w is None]:
                print(f"{package} {version}: no wheel", file=sys.stderr)
            found = {v: w for v, w in wheels.items() if w is not None}
            per_version = dict(zip(found, pool.map(facts_of, [package] * len(found), found.values())))
            for version, facts in per_version.items():
                print(f"{package} {version}: {sum(len(c) for c in facts['classes'].values())} fields", file=sys.stderr)
            record["packages"][package] = encode(per_version)
    args.out.write_text(dumps(record), encoding="utf-8")
    print(f"{args.out}: {sum(len(p['versions']) for p in record['packages'].values())} releases")


def dumps(record: dict) -> str:
    """JSON with one line per field history (small, and a diff shows which field changed)."""
    def block(value, depth: int) -> str:
        if depth >= 5 or not isinstance(value, dict):
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        pad = " " * (depth + 1)
        items = [f"{pad}{json.dumps(k)}: {block(v, depth + 1)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}" if items else "{}"
    return block(record, 0) + "\n"


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


def read_sources(archive_path: Path, places: tuple[str, ...] = ("",)) -> dict[str, str]:
    """The .py files under ``places`` of a wheel (their package paths) or an sdist (its ``src/`` or top folder
    removed)."""
    def wanted(name: str) -> bool:
        return name.endswith(".py") and any(name.startswith(p) for p in places)

    if archive_path.name.endswith(".whl"):
        with zipfile.ZipFile(archive_path) as archive:
            return {n: archive.read(n).decode("utf-8") for n in archive.namelist() if wanted(n)}
    out = {}
    with tarfile.open(archive_path) as archive:
        for member in archive.getmembers():
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            name = name.removeprefix("src/")
            if member.isfile() and wanted(name):
                out[name] = archive.extractfile(member).read().decode("utf-8")
    return out


@lru_cache(maxsize=512)
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


@lru_cache(maxsize=512)
def _declarations(text: str) -> tuple[ast.ClassDef | ast.ImportFrom, ...]:
    """The module's class definitions and ``from`` imports, in ``ast.walk``'s order: each file's tree is walked once,
    not once per record read from it (TRL's wheel: 11 records over the same files, 6.2 CPU s a wheel walking them
    again, most of that test's time)."""
    return tuple(node for node in ast.walk(_parse(text)) if isinstance(node, (ast.ClassDef, ast.ImportFrom)))


def _under(sources: dict[str, str], places: tuple[str, ...]) -> dict[str, str]:
    return {n: t for n, t in sources.items() if any(n == p or n.startswith(p + "/") for p in places)}


def facts_of(package: str, wheel: Path) -> dict:
    """{"classes": {record: {field: [default text, kinds, choices?]}}, "where": {record: file},
    "behaviours": {name: value}} read from one wheel."""
    places = {p for ps in CLASSES[package].values() for p in ps} | set(ENUMS[package])
    sources = read_sources(wheel, tuple(sorted(places)))
    enums = _classes(_under(sources, ENUMS[package]))[1]
    text_becomes_enum = package in TEXT_BECOMES_ENUM
    out: dict = {"classes": {}, "where": {}, "behaviours": {}}
    for record, places in CLASSES[package].items():
        chosen = _under(sources, places)
        classes, _ = _classes(chosen)
        if record not in classes:
            continue
        out["where"][record] = _defined_in(record, chosen)
        fields = {}
        for key, (annotation, default) in _fields([record], classes).items():
            kind = key_type(_with_enums(annotation, enums), text_becomes_enum).as_json()
            fields[key] = [default, "|".join(kind["kinds"])] + ([kind["choices"]] if "choices" in kind else [])
        out["classes"][record] = fields
    if package == "transformers":
        out["behaviours"] = {**transformers_behaviours(sources["transformers/training_args.py"]),
                             **tokenizer_behaviours(read_sources(wheel, TOKENIZER_PLACES))}
    if package == "axolotl":
        out["behaviours"] = axolotl_behaviours(_under(sources, _AXOLOTL))
    return out


def _defined_in(name: str, sources: dict[str, str]) -> str:
    """The file defining class ``name`` with the most fields (a re-exporting shim has none)."""
    best, size = "", -1
    for path, text in sources.items():
        for node in _declarations(text):
            if isinstance(node, ast.ClassDef) and node.name == name:
                fields = sum(isinstance(s, ast.AnnAssign) for s in node.body)
                if fields > size:
                    best, size = path, fields
    return best


# class name -> (base names, {field: (annotation text, default text)})
Classes = dict[str, tuple[list[str], dict[str, tuple[str, str]]]]


def _classes(sources: dict[str, str]) -> tuple[Classes, dict[str, list]]:
    """Class name -> (base names, {field: (annotation, default)}); enum name -> its values.

    Two classes of one name (TRL's ``KTOConfig`` shim over ``experimental.kto.KTOConfig``) are read as one, and a
    base imported under another name (``KTOConfig as _KTOConfig``) is followed to the class it names."""
    classes: Classes = {}
    enums: dict[str, list] = {}
    aliases: dict[str, str] = {}
    for text in sources.values():
        constants = _module_constants(_parse(text))
        for node in _declarations(text):
            if isinstance(node, ast.ImportFrom):
                aliases.update({a.asname: a.name for a in node.names if a.asname and a.asname != a.name})
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
            if any(b.endswith("Enum") for b in bases):
                enums[node.name] = [ast.literal_eval(s.value) for s in node.body
                                    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)]
                continue
            fields = {}
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    name, annotation = statement.target.id, ast.unparse(statement.annotation)
                    if name in SKIPPED_ATTRIBUTES or annotation.startswith("ClassVar") or _not_init(statement.value):
                        continue
                    default = _default_text(statement.value)
                    fields[name] = (annotation, constants.get(default, default))
                    alias = _alias(statement.value)
                    if alias:
                        fields[alias] = fields[name]
            before = classes.get(node.name, ([], {}))
            bases = [b for b in before[0] + bases if b != node.name]
            classes[node.name] = (list(dict.fromkeys(bases)), {**fields, **before[1]})
    for name, (bases, fields) in list(classes.items()):
        classes[name] = ([aliases.get(b, b) if b not in classes else b for b in bases], fields)
    return classes, enums


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """``default_optim = "adamw_torch_fused"`` at a module's top level: a default naming it is that text."""
    return {t.id: ast.unparse(node.value) for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) for t in node.targets if isinstance(t, ast.Name)}


def _not_init(value: ast.expr | None) -> bool:
    """``field(init=False)``: not a keyword the dataclass takes."""
    return isinstance(value, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords)


def _alias(value: ast.expr | None) -> str | None:
    """``Field(alias="model_type")``: the name a config file uses."""
    if isinstance(value, ast.Call):
        for keyword in value.keywords:
            if keyword.arg == "alias" and isinstance(keyword.value, ast.Constant):
                return keyword.value.value
    return None


def _default_text(value: ast.expr | None) -> str:
    if value is None:
        return "<required>"
    if isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] in ("field", "Field"):
        for keyword in value.keywords:
            if keyword.arg == "default":
                return ast.unparse(keyword.value)
            if keyword.arg == "default_factory":
                factory = keyword.value
                return ast.unparse(factory.body) if isinstance(factory, ast.Lambda) else f"{ast.unparse(factory)}()"
        first = value.args[0] if value.args else None
        if first is None or (isinstance(first, ast.Constant) and first.value is ...):
            return "<required>"
        return ast.unparse(first)
    return ast.unparse(value)


def _fields(roots: list[str], classes: Classes) -> dict[str, tuple[str, str]]:
    """Fields of the classes and all their bases found in the package (a subclass's annotation and default win)."""
    out: dict[str, tuple[str, str]] = {}
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name not in classes or name in seen:
            return
        seen.add(name)
        bases, fields = classes[name]
        for key, value in fields.items():
            out.setdefault(key, value)
        for base in bases:
            visit(base)

    for root in roots:
        visit(root)
    return out


def _with_enums(annotation: str, enums: dict[str, list]) -> str:
    """Replace a package enum's name by ``Literal[...]`` of its values."""
    try:
        tree = ast.parse(annotation, mode="eval")
    except SyntaxError:
        return annotation

    class Expand(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in enums and enums[node.id]:
                return ast.parse(f"Literal[{', '.join(repr(v) for v in enums[node.id])}]", mode="eval").body
            return node

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            return self.visit_Name(ast.Name(node.attr)) if node.attr in enums else node

    return ast.unparse(Expand().visit(tree))


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


TOKENIZER_PLACES = ("transformers/models/", "transformers/models/auto/tokenization_auto.py")


def tokenizer_behaviours(sources: dict[str, str]) -> dict:
    """How AutoTokenizer builds a tokenizer, read from tokenization_auto.py and each model's tokenization_*.py:
    ``tokenizer_rebuilds`` maps each class whose ``__init__`` sets its own pre-tokenizer to that pre-tokenizer's
    type (the file's is replaced; 4.x fast classes set none: tokenizer.json loads as it is);
    ``byte_level_llama_guard``: a declared LlamaTokenizer with a ByteLevel tokenizer.json loads TokenizersBackend."""
    rebuilds: dict[str, str] = {}
    for path, text in sources.items():
        if not re.search(r"/tokenization_\w+\.py$", path) or "pre_tokenizer" not in text:
            continue
        for node in ast.walk(_parse(text)):
            if isinstance(node, ast.ClassDef):
                init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
                found = re.search(r"self\._tokenizer\.pre_tokenizer\s*=\s*(pre_tokenizers\.\w+\(.*)",
                                  ast.unparse(init)) if init else None
                if found:
                    rebuilds[node.name] = _pre_tokenizer_kind(re.findall(r"pre_tokenizers\.(\w+)\(", found.group(1)))
    auto = sources.get("transformers/models/auto/tokenization_auto.py", "")
    return {"tokenizer_rebuilds": dict(sorted(rebuilds.items())),
            "byte_level_llama_guard": "_tokenizer_json_has_byte_level" in auto,
            "prefix_space_needs_slow": _prefix_space_needs_slow(sources)}


def _prefix_space_needs_slow(sources: dict[str, str]) -> dict[str, str]:
    """Fast classes whose ``__init__`` sets ``from_slow`` when ``add_prefix_space`` is given (4.x
    LlamaTokenizerFast): class, without ``Fast`` -> the slow vocabulary file it then needs (``tokenizer.model``).
    A folder without that file is refused (ValueError: Cannot instantiate this tokenizer from a slow version)."""
    out: dict[str, str] = {}
    for path, text in sources.items():
        if not re.search(r"/tokenization_\w+_fast\.py$", path):
            continue
        vocab = re.search(r"VOCAB_FILES_NAMES\s*=\s*\{[^}]*\"vocab_file\":\s*\"([^\"]+)\"", text)
        for node in ast.walk(_parse(text)):
            if not isinstance(node, ast.ClassDef):
                continue
            init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is not None and vocab and re.search(r"if add_prefix_space is not None:\s*kwargs\[['\"]from_slow['\"]\]"
                                                        r"\s*=\s*True", ast.unparse(init)):
                out[node.name.removesuffix("Fast")] = vocab.group(1)
    return dict(sorted(out.items()))


def _pre_tokenizer_kind(types: list[str]) -> str:
    """A pipeline's kind as mldebug compares it with a file's: ByteLevel or Metaspace wherever it sits in a
    Sequence, else the first type."""
    return next((kind for kind in ("ByteLevel", "Metaspace") if kind in types), types[0] if types else "None")


def _update_tokenizers(record: dict, folder: Path, offline: bool) -> None:
    """The tokenizer behaviours of every recorded transformers release, the other behaviours kept."""
    package = record["packages"]["transformers"]
    per_version = {}
    for version in package["versions"]:
        wheel = _wheel("transformers", version, folder, offline)
        if wheel is None:
            raise SystemExit(f"transformers {version}: no wheel")
        facts = decode(package, version)
        facts["behaviours"].update(tokenizer_behaviours(read_sources(wheel, TOKENIZER_PLACES)))
        per_version[version] = facts
        print(f"transformers {version}: {len(facts['behaviours']['tokenizer_rebuilds'])} classes rebuild",
              file=sys.stderr)
    package["behaviours"] = _histories(per_version, package["versions"], "behaviours")


def requires_transformers(archive: Path) -> str | None:
    """The wheel's (or sdist's PKG-INFO) ``Requires-Dist: transformers...`` specifier that holds on Linux without
    extras (None: the package does not depend on transformers)."""
    text = ""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as zipped:
            name = next((n for n in zipped.namelist() if n.endswith(".dist-info/METADATA")), None)
            text = zipped.read(name).decode("utf-8") if name else ""
    else:
        with tarfile.open(archive) as tarred:
            member = next((m for m in tarred.getmembers() if m.name.count("/") == 1 and m.name.endswith("PKG-INFO")),
                          None)
            text = tarred.extractfile(member).read().decode("utf-8") if member else ""
    from packaging.markers import Marker

    linux = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "python_version": "3.11",
             "extra": ""}
    for line in text.splitlines():
        found = re.match(r"Requires-Dist:\s*transformers\s*(?:\[[^\]]*\])?\s*\(?([^;()]*)\)?\s*(?:;(.*))?$", line)
        if found and (not found.group(2) or Marker(found.group(2)).evaluate(linux)):
            return found.group(1).strip()
    return None


def _pins(record: dict, folder: Path, offline: bool) -> dict:
    """framework -> [[release, its transformers specifier ("" when unpinned, null when it does not depend on it)]],
    at the releases where the pin changes."""
    out = {}
    for package in PIN_PACKAGES:
        releases = record["packages"].get(package, {}).get("versions", []) or list(PINNED.get(package, ()))
        history: list = []
        for version in sorted(releases, key=_key):
            archive = _wheel(package, version, folder, offline)
            if archive is None:
                print(f"{package} {version}: no wheel", file=sys.stderr)
                continue
            pin = requires_transformers(archive)
            if pin is None and not archive.name.endswith(".whl"):
                continue  # an sdist's PKG-INFO often lists no requirements at all: the pin is unknown, not absent
            if not history or history[-1][1] != pin:
                history.append([version, pin])
        out[package] = history
    return out


def axolotl_behaviours(sources: dict[str, str]) -> dict:
    """The classes ``AxolotlInputConfig.datasets`` accepts an entry as (a pydantic union: any member may take it)."""
    for text in sources.values():
        for node in ast.walk(_parse(text)):
            if isinstance(node, ast.ClassDef) and node.name == "AxolotlInputConfig":
                for statement in node.body:
                    if isinstance(statement, ast.AnnAssign) and getattr(statement.target, "id", "") == "datasets":
                        names = re.findall(r"\b([A-Z]\w*Dataset)\b", ast.unparse(statement.annotation))
                        return {"datasets_union": list(dict.fromkeys(names))}
    return {}


def encode(per_version: dict[str, dict]) -> dict:
    """Delta-encode: each class field -> [[version, value or null (gone)], ...] at the releases it changes;
    the same for where a class is read from and for the behaviours."""
    versions = sorted(per_version, key=_key)
    classes: dict[str, dict[str, list]] = {}
    for record in sorted({r for v in versions for r in per_version[v]["classes"]}):
        changes: dict[str, list] = {}
        last: dict[str, object] = {}
        for v in versions:
            present = per_version[v]["classes"].get(record)
            for key in sorted(set(last) | set(present or {})):
                now = None if present is None else present.get(key)
                if last.get(key) != now:
                    changes.setdefault(key, []).append([v, now])
                last[key] = now
        classes[record] = changes
    return {"versions": versions, "classes": classes, "where": _histories(per_version, versions, "where"),
            "behaviours": _histories(per_version, versions, "behaviours")}


def _histories(per_version: dict, versions: list[str], part: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for v in versions:
        values = per_version[v][part]
        for name in set(values) | set(out):
            history = out.setdefault(name, [])
            now = values.get(name)
            if (history[-1][1] if history else None) != now:
                history.append([v, now])
    return out


def decode(package_record: dict, version: str) -> dict:
    """The facts of one recorded version, as ``facts_of`` gives them."""
    out: dict = {"classes": {}, "where": {}, "behaviours": {}}
    for record, changes in package_record["classes"].items():
        fields = {key: value for key, history in changes.items() if (value := _at(history, version)) is not None}
        if fields:
            out["classes"][record] = fields
    for part in ("where", "behaviours"):
        out[part] = {name: value for name, history in package_record[part].items()
                     if (value := _at(history, version)) is not None}
    return out


def _at(history: list, version: str):
    value = None
    for since, now in history:
        if _key(since) <= _key(version):
            value = now
    return value


if __name__ == "__main__":
    main()
