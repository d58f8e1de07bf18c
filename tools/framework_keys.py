"""Generate the config key lists mldebug stores for frameworks that may not be installed.

    python tools/framework_keys.py axolotl 0.19.0
    python tools/framework_keys.py llamafactory 0.9.5
    python tools/framework_keys.py trl 1.16.0
    /path/to/venv-with-transformers-4.x/bin/python tools/framework_keys.py transformers 4.57.6

axolotl, LLaMA-Factory and TRL: the wheel of that exact version is fetched with ``pip download --no-deps``
(installing them would replace the transformers mldebug runs on) and its schema classes are read from
the source (pydantic models and dataclasses: every annotated class attribute is a key; enums defined
in the package become their values). Classes from other packages (TRL's and LLaMA-Factory's
TrainingArguments base) are left out: mldebug reads them from the installed transformers at run time.
transformers: run with a Python whose installed transformers is the version named (a throwaway venv);
the fields of ``Seq2SeqTrainingArguments`` are read from the real dataclass.
Output: mldebug_cli/frameworks/keys/<package>-<version>.json
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mldebug_cli.frameworks.schema import dataclass_keys, key_type  # noqa: E402

OUT = ROOT / "mldebug_cli" / "frameworks" / "keys"

# package -> (source folders inside the wheel, {schema name: its classes})
TARGETS = {
    "axolotl": (("axolotl/utils/schemas",), {"config": ["AxolotlInputConfig"], "datasets": ["SFTDataset"],
                                             # the entries of an rl: config (dpo/ipo/orpo/simpo, kto) and of
                                             # process reward models: axolotl's schema for each
                                             "datasets_dpo": ["DPODataset"], "datasets_kto": ["KTODataset"],
                                             "datasets_stepwise": ["StepwiseSupervisedDataset"],
                                             "deprecated": ["DeprecatedParameters"]}),
    "llamafactory": (("llamafactory/hparams",), {"config": ["ModelArguments", "DataArguments", "TrainingArguments",
                                                        "FinetuningArguments", "GeneratingArguments"]}),
    "trl": (("trl/trainer", "trl/experimental/orpo", "trl/scripts/utils.py", "trl/scripts/grpo.py"),
            {**{name: [name] for name in ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "ORPOConfig")},
             "script": ["ScriptArguments", "DatasetMixtureConfig", "ModelConfig"],  # what `trl sft` also parses
             "grpo_script": ["GRPOScriptArguments"]}),  # and `trl grpo` (reward_funcs)
}
SKIPPED_ATTRIBUTES = {"model_config"}  # pydantic's own settings, not a config key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package", choices=[*TARGETS, "transformers"])
    parser.add_argument("version")
    parser.add_argument("--wheel", help="use this wheel instead of downloading it")
    args = parser.parse_args()
    if args.package == "transformers":
        document = _transformers(args.version)
    else:
        wheel = Path(args.wheel) if args.wheel else _download(args.package, args.version)
        document = _from_wheel(args.package, args.version, wheel)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.package}-{args.version}.json"
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{path}: {sum(len(v) for v in document['schemas'].values())} keys")


def _download(package: str, version: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="mldebug-keys-"))
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder),
                    f"{package}=={version}"], check=True)
    return next(folder.glob("*.whl"))


def _from_wheel(package: str, version: str, wheel: Path) -> dict:
    folders, schemas = TARGETS[package]
    with zipfile.ZipFile(wheel) as archive:
        sources = {name: archive.read(name).decode("utf-8") for name in archive.namelist()
                   if name.endswith(".py") and any(name == f or name.startswith(f + "/") for f in folders)}
    classes, enums = _classes(sources)
    out = {name: {key: key_type(_with_enums(text, enums)).as_json() for key, text in _fields(roots, classes).items()}
           for name, roots in schemas.items()}
    return {"package": package, "version": version, "source": f"{wheel.name}: {', '.join(folders)} (class attributes)",
            "generated_by": "tools/framework_keys.py", "schemas": out}


def _classes(sources: dict[str, str]) -> tuple[dict[str, tuple[list[str], dict[str, str]]], dict[str, list]]:
    """Class name -> (base names, {field: annotation text}); enum name -> its values."""
    classes: dict[str, tuple[list[str], dict[str, str]]] = {}
    enums: dict[str, list] = {}
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
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
                    if name in SKIPPED_ATTRIBUTES or annotation.startswith("ClassVar"):
                        continue
                    fields[name] = annotation
                    alias = _alias(statement.value)
                    if alias:
                        fields[alias] = annotation
            classes[node.name] = (bases, fields)
    return classes, enums


def _alias(value: ast.expr | None) -> str | None:
    """``Field(alias="model_type")``: the name a config file uses."""
    if isinstance(value, ast.Call):
        for keyword in value.keywords:
            if keyword.arg == "alias" and isinstance(keyword.value, ast.Constant):
                return keyword.value.value
    return None


def _fields(roots: list[str], classes: dict) -> dict[str, str]:
    """Fields of the classes and all their bases found in the package (a subclass's annotation wins)."""
    out: dict[str, str] = {}

    def visit(name: str) -> None:
        if name not in classes:
            return
        bases, fields = classes[name]
        for key, text in fields.items():
            out.setdefault(key, text)
        for base in bases:
            visit(base)

    for root in roots:
        visit(root)
    return out


def _with_enums(annotation: str, enums: dict[str, list]) -> str:
    """Replace a package enum's name by ``Literal[...]`` of its values."""
    tree = ast.parse(annotation, mode="eval")

    class Expand(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in enums and enums[node.id]:
                return ast.parse(f"Literal[{', '.join(repr(v) for v in enums[node.id])}]", mode="eval").body
            return node

    return ast.unparse(Expand().visit(tree))


def _transformers(version: str) -> dict:
    import transformers

    if transformers.__version__ != version:
        sys.exit(f"the installed transformers is {transformers.__version__}, not {version}: run this with a Python "
                 f"that has transformers=={version}")
    keys = dataclass_keys([transformers.Seq2SeqTrainingArguments], text_becomes_enum=True)
    return {"package": "transformers", "version": version, "generated_by": "tools/framework_keys.py",
            "source": f"transformers {version} installed: dataclasses.fields(Seq2SeqTrainingArguments)",
            "schemas": {"config": {k: v.as_json() for k, v in sorted(keys.items())}}}


if __name__ == "__main__":
    main()
