"""The differential goldens, replayed without the frameworks: every stored case gives mldebug's verdict equal,
refusal named or flagged, never silent (mldebug showing something other than what the framework trains).

fixtures/differential/SUITE.json.gz holds generated rows (tests/differential/strategies.py, the seed recorded), the
setting and tokenizer of each group, and what the real framework made of each row (digests of its input_ids and
labels, dropped, or the exception it raised), written by ``python tools/differential.py run SUITE --write``.
"""

from __future__ import annotations

import gzip
import json
import sys

import pytest

from support import ROOT

GOLDENS = ROOT / "fixtures" / "differential"
sys.path.insert(0, str(ROOT / "tools"))

import differential  # noqa: E402  (tools/differential.py: the comparison the harness itself runs)


def _documents() -> dict[str, dict]:
    out = {}
    for path in sorted(GOLDENS.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            out[path.name.removesuffix(".json.gz")] = json.load(handle)
    return out


DOCUMENTS = _documents()
GROUPS = [pytest.param(suite, group, id=f"{suite}-{group['id']}-{group['shape']}-{group['setting']}")
          for suite, document in DOCUMENTS.items() for group in document["groups"]]


def test_the_goldens_record_seed_versions_and_command():
    assert DOCUMENTS, "no goldens under fixtures/differential"
    for suite, document in DOCUMENTS.items():
        assert document["suite"] == suite and isinstance(document["seed"], int)
        assert document["versions"] and document["command"].startswith("python tools/differential.py run")


@pytest.mark.replay(by="suite")
@pytest.mark.parametrize(("suite", "group"), GROUPS)
def test_no_silent_disagreement(suite, group, tmp_path):
    mine = differential.ours(suite, group, tmp_path)
    silent = [f"row {row}: {detail}" for row, verdict, detail in differential.verdicts(group, group["framework"], mine)
              if verdict == "silent"]
    assert silent == []


def test_every_stored_suite_holds_at_least_3000_generated_cases():
    """Issue 21's figure: at least 3,000 generated cases per framework suite (a case is one row)."""
    # issue 34's class suites (trl-sft-classes, llamafactory-classes) add to their framework's main suite
    small = {suite: sum(len(g["rows"]) for g in document["groups"]) for suite, document in DOCUMENTS.items()
             if not suite.endswith("-classes")}
    assert {suite: n for suite, n in small.items() if n < 3000} == {}


def test_the_axolotl_goldens_cover_named_templates_dataset_settings_and_types():
    """axolotl's cases run its own named templates (chat_template: NAME), the dataset settings that change what is
    read or trained, and its other dataset types, not only the tokenizer's template with the masking defaults."""
    document = DOCUMENTS.get("axolotl")
    if document is None:
        pytest.skip("no axolotl goldens")
    templates = {g["tokenizer"].partition("@")[0] for g in document["groups"] if "@" in g["tokenizer"]}
    assert {"qwen_25", "qwen3", "llama3", "chatml", "mistral_v7_tekken"} <= templates
    keys = {key for g in document["groups"] for key in g["config"]}
    assert {"roles_to_train", "train_on_eos", "train_on_inputs", "message_field_training", "split_thinking",
            "field_messages", "message_property_mappings", "roles", "type"} <= keys
    assert {g["config"]["type"] for g in document["groups"] if "type" in g["config"]} >= {"alpaca", "completion"}


def test_the_llamafactory_tokenizer_grid_covers_every_config():
    """Issue 39's differential: LLaMA-Factory 0.9.5 at transformers 5.6.0, 192 configs (tokenizers x templates
    auto/named/default/empty x train_on_prompt x mask_history x cutoff_len), with DeepSeek-V3 and a held-out
    byte-level file declared as Llama (both mis-loaded by 5.6.0) beside two that load right."""
    document = DOCUMENTS.get("llamafactory-tokenizers")
    if document is None:
        pytest.skip("no llamafactory-tokenizers goldens")
    assert document["versions"]["llamafactory"] == "0.9.5" and document["versions"]["transformers"] == "5.6.0"
    configs = {(g["tokenizer"], g["setting"]) for g in document["groups"]}
    assert configs == {(tokenizer, setting) for tokenizer, setting, _ in differential.LLT_GRID}
    assert len(configs) == 192
    assert {g["tokenizer"].split("@")[1] for g in document["groups"]} == set(differential.LLT_TOKENIZERS)
    assert {g["shape"] for g in document["groups"]} >= {"alpaca", "sharegpt", "sharegpt_tools", "sharegpt_system"}
