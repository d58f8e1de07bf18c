"""What mldebug claimed before the record (issue 21: stored key lists, one release standing in for every target)
against what the wheels' record says now, key by key and release by release.

    python tools/version_facts_diff.py [--before 69ef7a5]

Reads the old stored lists and the old record from git at ``--before`` (the last commit with them).
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import version_facts as vf  # noqa: E402

from mldebug_cli.frameworks import record, schema  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--before", default="69ef7a5")
before = parser.parse_args().before


def _old(name):
    return json.loads(
        subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{before}:mldebug_cli/frameworks/keys/{name}.json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


old = {n: _old(n) for n in ["transformers-4.57.6", "trl-1.16.0", "axolotl-0.19.0", "llamafactory-0.9.5"]}
old_record = _old("version-facts")["packages"]
import dataclasses  # noqa: E402

import transformers  # noqa: E402

installed_ta = {f.name for f in dataclasses.fields(transformers.TrainingArguments) if f.init}


def show(xs, n=8):
    xs = sorted(xs)
    return ", ".join(xs[:n]) + (f" (+{len(xs) - n} more)" if len(xs) > n else "")


def line(pkg, r, oldk, newk, what):
    add, rem = set(newk) - set(oldk), set(oldk) - set(newk)
    if add or rem:
        print(f"{pkg} {r} {what}: now known {len(add)} [{show(add)}]; no longer known {len(rem)} [{show(rem)}]")
    return len(add) + len(rem)


total = 0
print(
    "== transformers TrainingArguments (old: 4.x -> stored 4.57.6 list, 5.x -> installed 5.24 + warmup_ratio while deprecated)"
)
for r in record.releases("transformers"):
    if vf._key(r) < (5, 0):
        oldk = set(old["transformers-4.57.6"]["schemas"]["config"])
    else:
        oldk = set(installed_ta) | ({"warmup_ratio"} if vf._key(r) < (5, 15) else set())
    newk = set(
        schema.recorded_keys(
            "transformers", (("Seq2SeqTrainingArguments",) if vf._key(r) < (5, 0) else ()) + ("TrainingArguments",), r
        )
    )
    total += line("transformers", r, oldk, newk, "keys")
print("== TRL, each class's own fields (old: the stored 1.16.0 list for every target)")
o = old["trl-1.16.0"]["schemas"]
for r in record.releases("trl"):
    for cls in ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "ORPOConfig"):
        newk = set(schema.recorded_keys("trl", (cls,), r))
        oldk = set(o[cls])
        total += line("trl", r, oldk, newk, cls)
    newk = set(schema.recorded_keys("trl", ("ScriptArguments", "DatasetMixtureConfig", "ModelConfig"), r))
    total += line("trl", r, set(o["script"]), newk, "script")
print("== axolotl (old: the stored 0.19.0 list for every target)")
o = old["axolotl-0.19.0"]["schemas"]
for r in record.releases("axolotl"):
    total += line(
        "axolotl", r, set(o["config"]), set(schema.recorded_keys("axolotl", ("AxolotlInputConfig",), r)), "AxolotlInputConfig"
    )
    for cls, k in (("SFTDataset", "datasets"), ("DPODataset", "datasets_dpo"), ("KTODataset", "datasets_kto")):
        total += line("axolotl", r, set(o[k]), set(schema.recorded_keys("axolotl", (cls,), r)), cls)
print("== LLaMA-Factory (old: the stored 0.9.5 list for every target)")
o = old["llamafactory-0.9.5"]["schemas"]["config"]
from mldebug_cli.frameworks.llama_factory.framework import DATACLASSES  # noqa: E402

for r in record.releases("llamafactory"):
    total += line("llamafactory", r, set(o), set(schema.recorded_keys("llamafactory", DATACLASSES, r)), "arguments")
    if r == "0.9.5":
        new = schema.recorded_keys("llamafactory", DATACLASSES, r)
        for k in sorted(set(o) & set(new)):
            ok = o[k]
            nk = new[k].as_json()
            if ok != nk:
                print(f"   llamafactory 0.9.5 {k}: type {ok} -> {nk}")
print("== defaults in the old record that changed for the same release")
for pkg, prec in old_record.items():
    for r in prec["versions"]:
        od = {}
        for cls, ch in prec["classes"].items():
            for key, hist in ch.items():
                v = vf._at(hist, r)
                if v is not None:
                    od[(cls, key)] = v
        for (cls, key), v in od.items():
            nv = record.default(pkg, cls, key, r) if r in record.releases(pkg) else None
            if nv is not None and nv != v:
                print(f"   {pkg} {r} {cls}.{key}: {v!r} -> {nv!r}")
print("total key differences:", total)
