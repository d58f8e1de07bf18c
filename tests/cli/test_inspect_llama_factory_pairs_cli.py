"""inspect-data --task dpo --framework llama-factory end to end: the JSON rows' ids and labels are those LLaMA-Factory
0.9.5's pairwise processor made of the project's ranking rows (fixtures/llamafactory-rows/pairwise.json; goldens in
fixtures/llamafactory-0.9.5/, written by tools/llamafactory_goldens.py), row for row, and the row it drops is
reported dropped."""

from __future__ import annotations

import json

import pytest
from test_inspect_data_cli import run

from support import CORPUS, FIXTURES, LLAMA3, QWEN25, TOKENIZERS, needs_corpus

GOLDENS = FIXTURES / "llamafactory-0.9.5"
PAIRS = FIXTURES / "llamafactory-rows" / "pairwise.json"
FLAGS = {"cutoff_len": "--max-length"}  # the overrides inspect-data takes as flags; the others go in a config


def _cases():
    for path in sorted(GOLDENS.glob("*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        marks = [needs_corpus] if golden["tokenizer_origin"] == "corpus" else []
        for setting in golden.get("pairwise", {}):
            yield pytest.param(path.name, setting, marks=marks, id=f"{path.stem}-{setting}")


def _arguments(golden: dict, overrides: dict, tmp_path) -> list[str]:
    """Flags for the template and cutoff_len; a LLaMA-Factory config (stage: dpo) for settings no flag takes."""
    folder = (TOKENIZERS if golden["tokenizer_origin"] == "npm" else CORPUS / "tokenizers") / golden["tokenizer"]
    if set(overrides) <= set(FLAGS):
        flags = [x for key, value in overrides.items() for x in (FLAGS[key], str(value))]
        return [str(PAIRS), "-t", str(folder), "--framework", "llama-factory", "--template", golden["template"], *flags]
    config = tmp_path / "dpo.yaml"
    keys = {"model_name_or_path": str(folder), "stage": "dpo", "dataset": "lf_pairwise",
            "dataset_dir": str(PAIRS.parent), "template": golden["template"], **overrides}
    config.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in keys.items()), encoding="utf-8")
    return ["--config", str(config), "--allow-outside-paths"]


@pytest.mark.parametrize(("name", "setting"), list(_cases()))
def test_pairs_match_llama_factory_row_for_row(name, setting, tmp_path):
    golden = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    case = golden["pairwise"][setting]
    expected = case["rows"]
    result = run("inspect-data", *_arguments(golden, case["overrides"], tmp_path), "--task", "dpo",
                 "--rows", f"0-{len(expected) - 1}", "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert "pairwise processor" in doc["context"]["framework"]
    views = {v["row"]: v for v in doc["rows"]}
    mismatches = []
    for i, want in enumerate(expected):
        view = views[i]
        if want.get("dropped"):
            same = view.get("dropped") is True and "drops the row" in view["error"]
        else:
            same = all(view[side]["input_ids"] == want[f"{side}_input_ids"]
                       and view[side]["labels"] == want[f"{side}_labels"] for side in ("chosen", "rejected"))
        if not same:
            mismatches.append(i)
    assert mismatches == []
    dropped = sum(bool(w.get("dropped")) for w in expected)
    assert doc["summary"]["rows_dropped"] == dropped and doc["summary"]["pairs"] == len(expected) - dropped
    assert [f["location"]["row"] for f in doc["findings"] if f["code"] == "DP013"] == \
        [i for i, w in enumerate(expected) if w.get("dropped")]


def test_the_checks_run_on_llama_factory_pairs(tmp_path):
    """DP001 on a pair LLaMA-Factory encodes alike, DP002 on an empty reply, DP013 (not DP005) on a row its converter
    drops, an alpaca ranking row read with its instruction/input; no DP007, as the template closes the replies."""
    rows = [
        {"instruction": "Name a prime number.", "input": "Below ten.", "chosen": "Seven.", "rejected": "Nine."},
        {"instruction": "Say hi.", "input": "", "chosen": "Hi!", "rejected": "Hi!"},
        {"instruction": "Spell 'cat'.", "input": "", "chosen": "C-A-T.", "rejected": ""},
        {"conversations": [{"from": "gpt", "value": "Hello."}], "chosen": {"from": "gpt", "value": "A"},
         "rejected": {"from": "gpt", "value": "B"}},
    ]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    result = run("inspect-data", path, "-t", LLAMA3, "--framework", "llama-factory", "--template", "llama3",
                 "--rows", "0-3", "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert sorted((f["code"], f["location"]["row"]) for f in doc["findings"]) == [
        ("DP001", 1), ("DP002", 2), ("DP013", 3)]
    first = doc["rows"][0]
    assert "Name a prime number.\nBelow ten." in first["prompt"] and first["prompt"].startswith("<|begin_of_text|>")
    assert first["chosen"]["texts"][-1] == "<|eot_id|>"
    assert doc["summary"]["rows_dropped"] == 1 and doc["context"]["truncation_mode"] is None


def test_kto_rows_stay_with_trl_and_a_bad_row_is_a_finding(tmp_path):
    """--task kto with --framework llama-factory is not its pairwise processor; a row it cannot read stops nothing."""
    kto = run("inspect-data", PAIRS, "-t", QWEN25, "--framework", "llama-factory", "--task", "kto", "--rows", "0",
              "-f", "json", "--exit-zero")
    assert kto.exit_code == 0 and "pairwise" not in json.loads(kto.stdout)["context"]["framework"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"instruction": "Q", "chosen": "A", "rejected": "B"},
                                {"instruction": "Q", "chosen": ["A"], "rejected": "B"}]), encoding="utf-8")
    result = run("inspect-data", path, "-t", QWEN25, "--framework", "llama-factory", "--template", "qwen", "--task",
                 "dpo", "--rows", "0-1", "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["code"] == "DP013" and finding["location"]["row"] == 1 and "chosen is not text" in finding["message"]


def test_a_template_mldebug_does_not_emulate_is_dp014_and_no_trl_preparation_is_claimed():
    result = run("inspect-data", PAIRS, "-t", QWEN25, "--framework", "llama-factory", "--template", "yi", "--all",
                 "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (gap,) = [f for f in doc["findings"] if f["code"] == "DP014"]
    assert "template 'yi'" in gap["message"] and "TRL" not in doc["context"]["framework"]
    assert "parsed from the tokenizer's chat template" in doc["context"]["framework"]
