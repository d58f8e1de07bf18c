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


def test_the_trl_classes_goldens_meet_every_shape_under_several_settings():
    """Issue 34: the TRL classes draw takes its shapes in turn, so the stored goldens hold every one of them (content
    parts of every form, weights, rows without an assistant turn, multi-byte text, tool-call ids of every form),
    each under more than one TRL setting."""
    sys.path.insert(0, str(ROOT / "tests" / "differential"))
    import strategies

    document = DOCUMENTS["trl-sft-classes"]
    settings: dict[str, set[str]] = {}
    for group in document["groups"]:
        settings.setdefault(group["shape"], set()).add(group["setting"])
    assert set(settings) == set(strategies.SFT_CLASSES_SHAPES)
    assert {shape: names for shape, names in settings.items() if len(names) < 2} == {}
    # TRL trains rows of each shape the last draw missed (content parts raise in these templates: refusals named)
    trained = {g["shape"] for g in document["groups"] for r in g["framework"]["rows"] if "digest" in r}
    assert trained >= {"no_assistant", "multi_byte", "tool_id_int", "tool_id_string", "tool_id_missing"}


@pytest.mark.slow  # two LLaMA-Factory groups of 40 rows each through mldebug: ~10 CPU s
def test_rows_llama_factory_drops_are_shown_dropped_as_its_converter_drops_them(tmp_path):
    """Issue 34: the rows LLaMA-Factory 0.9.5's converter or processor drops (an odd turn count, a user turn alone, a
    system turn alone) are shown dropped, with the reason: equal to the framework's golden, not flagged."""
    document = DOCUMENTS["llamafactory-classes"]
    groups = [g for g in document["groups"] if g["shape"] == "sharegpt_no_assistant"]
    dropped = [(g, r["row"]) for g in groups for r in g["framework"]["rows"] if r.get("digest") == "dropped"]
    assert len(dropped) >= 20
    for group in groups:
        verdicts = differential.verdicts(group, group["framework"], differential.ours(document["suite"], group, tmp_path))
        assert {verdict for _, verdict, _ in verdicts} <= {"equal", "refusal"}, group["id"]
