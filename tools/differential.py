"""Differential testing: generated datasets and configs, run through the real framework's data preparation and
through mldebug; input_ids, labels, dropped rows and refusals compared row by row.

    python tools/differential.py run SUITE [--seed 21] [--groups N] [--write]   # both sides, prints the table
    python tools/differential.py table                                           # the table of the stored goldens

MLDEBUG_FRAMED=FILE keeps the framework side of a run in FILE and reuses it when it exists (same suite, seed, groups).

SUITE is one of: trl-sft, trl-sft-classes, trl-dpo, trl-kto, trl-orpo, trl-grpo, llamafactory-sft,
llamafactory-classes, llamafactory-pairwise, llamafactory-tokenizers, axolotl, axolotl-parts, unsloth (the two
``-classes`` suites draw issue 34's classes: typed content parts of every form with per-message weights, rows
without an assistant turn, multi-byte text, tool-call ids of every form). ``llamafactory-tokenizers`` is a grid, not a draw of settings: 192 configs
(LLT_TOKENIZERS x templates auto/named/default/empty x train_on_prompt x mask_history x cutoff_len), each config
given the next drawn group of rows (``--groups`` a multiple of 192 gives every config the same number). Rows are drawn by the hypothesis strategies in tests/differential/strategies.py (seeded), in groups of
4-10 rows of one shape; each group gets a tokenizer (the repository's npm tokenizers) and a setting drawn from the
suite's settings. A *case* is one row under one setting and tokenizer.

The framework side runs in the framework's own Python (``frame SUITE IN OUT``, a subprocess):
- TRL 1.16.0 (the global Python): ``SFTTrainer`` (tools/trl_goldens.py ``run_setting``), ``DPOTrainer``,
  ``KTOTrainer``, ``GRPOTrainer``, the experimental ``ORPOTrainer`` (tools/trl_preference_goldens.py);
- LLaMA-Factory 0.9.5 at transformers 5.6.0 (/work/venvs/lf095, else /work/venvs/lf-vision):
  ``SupervisedDatasetProcessor``/``PairwiseDatasetProcessor`` after its
  converters, as tools/llamafactory_goldens.py runs them;
- axolotl 0.19.0 (its wheel unpacked in /work/venvs/axolotl-whl, global Python): the ``chat_template`` strategy, as
  tools/axolotl_goldens.py runs it;
- Unsloth (unsloth_zoo 2026.10.9, /work/venvs/unsloth): ``train_on_responses_only`` on TRL's own ids.
A group the framework refuses as a whole records the exception; the rows are then run one at a time so a refusal
is pinned on its rows.

Verdict per case: *equal* (same ids and labels, or both drop the row), *refusal named* (the framework raises and
mldebug reports an error finding on that row or the dataset, or stops with exit 2), *flagged* (ids differ but
mldebug reports an error on the row: the user is told), *silent* (ids or labels differ and mldebug does not say
so: a bug). ``--write`` stores fixtures/differential/SUITE.json.gz (rows, settings, the framework's ids and labels
as digests, the seed and versions); tests/differential/test_differential_goldens.py replays them without the frameworks.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "differential"
TOKENIZER_DIR = ROOT / "fixtures" / "tokenizers"
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct")
VENVS = Path(os.environ.get("MLDEBUG_VENVS", "/work/venvs"))
AXOLOTL_WHEEL = VENVS / "axolotl-whl"
SMALL = 32
IGNORE = -100

# TRL SFT: SFTConfig keys -> inspect-data options ("trl": frameworks.trl.framework.TrlOptions, what a TRL config's keys give)
TRL_SFT_SETTINGS: dict[str, tuple[dict, dict]] = {
    "default": ({}, {}),
    "assistant_only_loss": ({"assistant_only_loss": True}, {"train_on": "assistant"}),
    "completion_only_loss_on": ({"completion_only_loss": True}, {"trl": {"completion_only_loss": True}}),
    "completion_only_loss_off": ({"completion_only_loss": False}, {"trl": {"completion_only_loss": False}}),
    "assistant_only_completion_off": ({"assistant_only_loss": True, "completion_only_loss": False},
                                      {"train_on": "assistant", "trl": {"completion_only_loss": False}}),
    "max_length_8": ({"max_length": 8}, {"max_length": 8}),
    "max_length_32": ({"max_length": SMALL}, {"max_length": SMALL}),
    "max_length_none": ({"max_length": None}, {"trl": {"no_max_length": True}}),
    "max_length_32_keep_end": ({"max_length": SMALL, "truncation_mode": "keep_end"},
                               {"max_length": SMALL, "truncation_mode": "keep_end"}),
    "assistant_only_max_length_32": ({"assistant_only_loss": True, "max_length": SMALL},
                                     {"train_on": "assistant", "max_length": SMALL}),
    "completion_off_max_length_8_keep_end": ({"completion_only_loss": False, "max_length": 8, "truncation_mode": "keep_end"},
                                             {"max_length": 8, "truncation_mode": "keep_end",
                                              "trl": {"completion_only_loss": False}}),
    "packing_bfd_32": ({"packing": True, "max_length": SMALL}, {"max_length": SMALL, "trl": {"packing": True}}),
    "packing_bfd_1024": ({"packing": True}, {"trl": {"packing": True}}),
    "packing_bfd_split_32": ({"packing": True, "packing_strategy": "bfd_split", "max_length": SMALL},
                             {"max_length": SMALL, "trl": {"packing": True, "packing_strategy": "bfd_split"}}),
    "packing_wrapped_32": ({"packing": True, "packing_strategy": "wrapped", "max_length": SMALL},
                           {"max_length": SMALL, "trl": {"packing": True, "packing_strategy": "wrapped"}}),
    "packing_bfd_32_keep_end": ({"packing": True, "max_length": SMALL, "truncation_mode": "keep_end"},
                                {"max_length": SMALL, "truncation_mode": "keep_end", "trl": {"packing": True}}),
    "packing_assistant_only_32": ({"packing": True, "max_length": SMALL, "assistant_only_loss": True},
                                  {"max_length": SMALL, "train_on": "assistant", "trl": {"packing": True}}),
    "packing_max_length_none": ({"packing": True, "max_length": None},
                                {"trl": {"packing": True, "no_max_length": True}}),
    "padding_free_max_length_none": ({"padding_free": True, "max_length": None},
                                     {"trl": {"padding_free": True, "no_max_length": True}}),
    "padding_free_max_length_1024": ({"padding_free": True}, {"trl": {"padding_free": True}}),
}

# suite -> setting name -> (framework config, mldebug options)
SUITES: dict[str, dict[str, tuple[dict, dict]]] = {
    "trl-sft": TRL_SFT_SETTINGS,
    "trl-dpo": {
        "default": ({}, {"task": "dpo"}),
        "max_length_32": ({"max_length": SMALL}, {"task": "dpo", "max_length": SMALL}),
        "keep_end_32": ({"max_length": SMALL, "truncation_mode": "keep_end"},
                        {"task": "dpo", "max_length": SMALL, "truncation_mode": "keep_end"}),
    },
    "trl-kto": {"default": ({}, {"task": "kto"}), "max_length_32": ({"max_length": SMALL}, {"task": "kto", "max_length": SMALL})},
    "trl-orpo": {"default": ({}, {"task": "orpo"}), "max_length_32": ({"max_length": SMALL}, {"task": "orpo", "max_length": SMALL})},
    "trl-grpo": {"default": ({}, {"task": "grpo"})},
}
LF_SETTINGS = {
    "defaults": {}, "train_on_prompt": {"train_on_prompt": True}, "mask_history": {"mask_history": True},
    "cutoff_32": {"cutoff_len": SMALL}, "cutoff_32_mask_history": {"cutoff_len": SMALL, "mask_history": True},
}
SUITES["llamafactory-sft"] = {name: (config, {}) for name, config in LF_SETTINGS.items()}
SUITES["llamafactory-pairwise"] = {name: (config, {}) for name, config in LF_SETTINGS.items() if "mask" not in name}
# issue 34's classes (tests/differential/strategies.py sft_classes_dataset, lf_classes_dataset): typed content parts
# of every form and per-message weights, rows without an assistant turn, multi-byte text, tool-call ids of every form
SUITES["trl-sft-classes"] = {name: TRL_SFT_SETTINGS[name] for name in (
    "default", "assistant_only_loss", "completion_only_loss_off", "max_length_32", "max_length_32_keep_end",
    "packing_bfd_32", "padding_free_max_length_1024")}
SUITES["llamafactory-classes"] = dict(SUITES["llamafactory-sft"])
SUITES["axolotl"] = {
    "defaults": ({}, {}),
    "train_on_inputs": ({"train_on_inputs": True}, {"train_on_inputs": True}),
    "roles_user_assistant": ({"roles_to_train": ["user", "assistant"]}, {"roles_to_train": ("user", "assistant")}),
    "train_on_eos_all": ({"train_on_eos": "all"}, {"train_on_eos": "all"}),
    "train_on_eos_last": ({"train_on_eos": "last"}, {"train_on_eos": "last"}),
    "train_on_eos_none": ({"train_on_eos": "none"}, {"train_on_eos": "none"}),
}
# axolotl's dataset settings beyond the masking defaults (the mldebug side reads each group's config as axolotl's
# YAML, through mldebug's own config reader, so the options half is not used for them)
AXOLOTL_ROLES = {"system": ["shop"], "user": ["customer"], "assistant": ["mechanic"]}
AXOLOTL_MAPPED = {"field_messages": "dialogue", "message_property_mappings": {"role": "speaker", "content": "text"},
                  "roles": AXOLOTL_ROLES}
SUITES["axolotl"].update({
    "roles_user": ({"roles_to_train": ["user"]}, {}),
    "roles_system_assistant_eos_all": ({"roles_to_train": ["system", "assistant"], "train_on_eos": "all"}, {}),
    "train_on_inputs_eos_none": ({"train_on_inputs": True, "train_on_eos": "none"}, {}),
    "roles_none_eos_last": ({"roles_to_train": [], "train_on_eos": "last"}, {}),
    "message_field_training": ({"message_field_training": "train"}, {}),
    "message_field_training_eos_all": ({"message_field_training": "train", "train_on_eos": "all"}, {}),
    "split_thinking": ({"split_thinking": True}, {}),
    "split_thinking_eos_last": ({"split_thinking": True, "train_on_eos": "last"}, {}),
    "mapped": (AXOLOTL_MAPPED, {}),
    "mapped_older_keys": ({"field_messages": "dialogue", "message_field_role": "speaker", "message_field_content": "text",
                           "roles": AXOLOTL_ROLES}, {}),
    "mapped_roles_to_train_eos_all": ({**AXOLOTL_MAPPED, "roles_to_train": ["customer", "mechanic"], "train_on_eos": "all"}, {}),
    # axolotl's other dataset types (its prompters, through its own dataset dispatch)
    "type_alpaca": ({"type": "alpaca"}, {}),
    "type_alpaca_train_on_inputs": ({"type": "alpaca", "train_on_inputs": True}, {}),
    "type_alpaca_chatml": ({"type": "alpaca:chatml"}, {}),
    "type_alpaca_chat": ({"type": "alpaca_chat"}, {}),
    "type_alpaca_w_system": ({"type": "alpaca_w_system.load_instruct"}, {}),
    "type_completion": ({"type": "completion"}, {}),
})
# settings that read a key only some shapes have: shape -> its settings (other shapes: the rest)
SHAPE_SETTINGS = {"axolotl": {
    "messages_train": ("defaults", "message_field_training", "message_field_training_eos_all"),
    "messages_think": ("defaults", "split_thinking", "split_thinking_eos_last", "train_on_eos_all"),
    "dialogue_mapped": ("mapped", "mapped_older_keys", "mapped_roles_to_train_eos_all"),
    "alpaca": ("type_alpaca", "type_alpaca_train_on_inputs", "type_alpaca_chatml", "type_alpaca_chat",
               "type_alpaca_w_system"),
    "text": ("type_completion",),
}}
# axolotl's per-part and per-message training (issue 34): content parts with train/weight flags, a message-level
# train_detail (message_field_training_detail), flagged reasoning_content, and the masking settings around them
SUITES["axolotl-parts"] = {
    "defaults": ({}, {}),
    "train_on_eos_all": ({"train_on_eos": "all"}, {}),
    "train_on_eos_last": ({"train_on_eos": "last"}, {}),
    "train_on_eos_none": ({"train_on_eos": "none"}, {}),
    "roles_user_assistant": ({"roles_to_train": ["user", "assistant"]}, {}),
    "roles_none": ({"roles_to_train": []}, {}),
    "train_on_inputs": ({"train_on_inputs": True}, {}),
    "message_field_training": ({"message_field_training": "train"}, {}),
    "message_field_training_detail": ({"message_field_training_detail": "train_detail"}, {}),
    "message_field_training_detail_eos_all": ({"message_field_training_detail": "train_detail", "train_on_eos": "all"}, {}),
}
SHAPE_SETTINGS["axolotl-parts"] = {
    "messages_train_detail": ("defaults", "message_field_training_detail", "message_field_training_detail_eos_all"),
    "parts_train_field": ("defaults", "message_field_training", "train_on_eos_all"),
}
# axolotl: (its named template, tokenizer) pairs, "" the tokenizer's own (tokenizer_default)
AXOLOTL_TEMPLATES = ("@qwen2.5-instruct", "@qwen3", "@llama3-instruct", "@mistral-nemo-instruct",
                     "qwen_25@qwen2.5-instruct", "chatml@qwen2.5-instruct", "qwen3@qwen3", "chatml@qwen3",
                     "llama3@llama3-instruct", "chatml@llama3-instruct", "mistral_v7_tekken@mistral-nemo-instruct")
CLOCK = "2026-11-24T12:00:00"  # templates that read the clock (strftime_now) render at this instant, both sides
SUITES["unsloth"] = {
    "default": ({}, {}), "max_length_32": ({"max_length": SMALL}, {"max_length": SMALL}),
    "last_response_only": ({}, {"last_response_only": True}), "wrong_response_part": ({}, {}),
}
# LLaMA-Factory: (template, tokenizer) pairs (None: parsed from the tokenizer's chat template)
LF_TEMPLATES = ("qwen@qwen2.5-instruct", "qwen3@qwen3", "qwen3_nothink@qwen3", "llama3@llama3-instruct",
                "mistral@mistral-nemo-instruct", "default@qwen2.5-instruct", "chatml@qwen2.5-instruct",
                "@qwen2.5-instruct", "@llama3-instruct", "empty@llama3-instruct")
SUITE_TOKENIZERS = {"llamafactory-sft": LF_TEMPLATES, "llamafactory-pairwise": LF_TEMPLATES,
                    "llamafactory-classes": LF_TEMPLATES}
# llamafactory-tokenizers: tokenizer -> LLaMA-Factory's template named for it. Llama 3 loads right in every release;
# DeepSeek-V3 declares LlamaTokenizerFast over a byte-level file (transformers 5.0-5.21 drop its spaces and
# newlines); the held-out two are never used by the other suites: Qwen2.5's byte-level file declared as
# LlamaTokenizerFast (the same mis-load on another vocabulary) and Mistral-Nemo's (Tekken, its own class)
LLT_TOKENIZERS = {"llama3-instruct": "llama3", "deepseek-v3": "deepseek3", "qwen2.5-as-llama": "qwen",
                  "mistral-nemo-instruct": "mistral"}
LLT_TEMPLATES = ("auto", "named", "default", "empty")
LLT_CUTOFFS = (None, SMALL, 96)
LOSS = "DS060"  # the error that names the characters a row loses to the run's tokenizer


def _llt_grid() -> list[tuple[str, str, dict]]:
    """(template@tokenizer, setting name, LLaMA-Factory data arguments) for the 192 configs."""
    out = []
    for name, named in LLT_TOKENIZERS.items():
        for kind in LLT_TEMPLATES:
            template = {"auto": "", "named": named}.get(kind, kind)
            for train_on_prompt in (False, True):
                for mask_history in (False, True):
                    for cutoff in LLT_CUTOFFS:
                        config: dict = {"train_on_prompt": True} if train_on_prompt else {}
                        if mask_history:
                            config["mask_history"] = True
                        if cutoff is not None:
                            config["cutoff_len"] = cutoff
                        setting = f"{kind}-tp{int(train_on_prompt)}-mh{int(mask_history)}-cut{cutoff or 'default'}"
                        out.append((f"{template}@{name}", setting, config))
    return out


LLT_GRID = _llt_grid()
SUITES["llamafactory-tokenizers"] = {setting: (config, {}) for _, setting, config in LLT_GRID}
SUITE_TOKENIZERS["axolotl"] = SUITE_TOKENIZERS["axolotl-parts"] = AXOLOTL_TEMPLATES
GROUP_SIZE = {"axolotl": 60, "axolotl-parts": 60, "llamafactory-classes": 40}  # rows per group (one framework set-up each)
WRONG_RESPONSE_PART = "<|assistant|>\n"  # a mistyped part: matches nothing
TOOL_DATE = "26 Nov 2026"  # the date Llama 3's tool prompt carries, pinned on both sides
LF_VENV = next((VENVS / n for n in ("lf095", "lf-vision") if (VENVS / n / "bin" / "python").exists()), VENVS / "lf095")
PYTHONS = {"trl": sys.executable, "axolotl": sys.executable,
           "llamafactory": str(LF_VENV / "bin" / "python"), "unsloth": str(VENVS / "unsloth" / "bin" / "python")}


def owner(suite: str) -> str:
    return suite.split("-")[0]


# ---------------------------------------------------------------------------------------------------- generation


def generate(suite: str, seed: int, groups: int) -> list[dict]:
    """Seeded groups of rows of one shape, each with a tokenizer and a setting."""
    sys.path.insert(0, str(ROOT / "tests" / "differential"))
    import strategies

    strategy = {
        "trl-sft": strategies.sft_dataset(), "unsloth": strategies.messages_dataset(),
        "axolotl": strategies.axolotl_dataset(),
        "axolotl-parts": strategies.axolotl_parts_dataset(),
        "trl-dpo": strategies.preference_dataset("dpo"), "trl-kto": strategies.preference_dataset("kto"),
        "trl-orpo": strategies.preference_dataset("orpo"), "trl-grpo": strategies.preference_dataset("grpo"),
        "llamafactory-sft": strategies.sharegpt_dataset(), "llamafactory-pairwise": strategies.sharegpt_dataset(True),
        "llamafactory-tokenizers": strategies.sharegpt_dataset(),
        "trl-sft-classes": strategies.sft_classes_dataset(), "llamafactory-classes": strategies.lf_classes_dataset(),
    }[suite]
    # the grid joins drawn groups (4-10 rows each) into files of LLT_ROWS: enough of each shape for every file
    draws = groups * (LLT_ROWS // 4 + 1) if suite == "llamafactory-tokenizers" else groups
    # suites whose shapes are classes to meet: the shapes in turn (a free draw of 40 met 5 of trl-sft-classes' 10),
    # each shape's groups drawn by its own run of the strategy (hypothesis needs one strategy per run)
    in_turn = {"trl-sft-classes": (strategies.sft_classes_dataset, strategies.SFT_CLASSES_SHAPES)}.get(suite)
    if in_turn:
        maker, shapes = in_turn
        per_shape = [_draw_values(maker(shape), seed, -(-draws // len(shapes))) for shape in shapes]
        drawn = [value for values in zip(*per_shape) for value in values]
    else:
        drawn = _draw_values(strategy, seed, draws)
    if suite == "llamafactory-tokenizers":
        return grid_groups(drawn, groups)
    return assemble(suite, seed, drawn[:groups], GROUP_SIZE.get(suite, 200))


def _draw_values(strategy, seed: int, count: int) -> list:
    """``count`` values of ``strategy``, drawn with ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        drawn.append(value)

    collect()
    return drawn


LLT_ROWS = 18  # rows per config at least (drawn groups of one shape joined: a framework run costs per file)


def grid_groups(drawn: list[tuple[str, list[dict]]], groups: int) -> list[dict]:
    """One file per config of the grid (``groups`` of them, the grid in turn): the shapes in turn, each file the
    next drawn groups of its shape joined to at least LLT_ROWS rows."""
    pools: dict[str, list[list[dict]]] = {}
    for shape, rows in drawn:
        pools.setdefault(shape, []).append(rows)
    shapes = sorted(pools)
    out = []
    for n in range(groups):
        # the shapes in turn, skipping one whose drawn rows are spent
        shape = next((shapes[(n + k) % len(shapes)] for k in range(len(shapes))
                      if sum(map(len, pools[shapes[(n + k) % len(shapes)]])) >= LLT_ROWS), None)
        if shape is None:
            raise SystemExit(f"not enough rows drawn for {groups} configs")
        rows: list[dict] = []
        while len(rows) < LLT_ROWS:
            rows += pools[shape].pop(0)
        tokenizer, setting, config = LLT_GRID[n % len(LLT_GRID)]
        out.append({"id": n, "shape": shape, "tokenizer": tokenizer, "setting": setting, "config": config,
                    "rows": rows})
    return out


def tokenizer_folder(name: str) -> Path:
    """The repository's tokenizer folder, or for a declared-class variant (tests/differential/strategies.py
    DECLARED_CLASS_VARIANTS) one made in a scratch folder: its tokenizer.json linked, its config rewritten."""
    if (TOKENIZER_DIR / name / "tokenizer.json").exists():
        return TOKENIZER_DIR / name
    sys.path.insert(0, str(ROOT / "tests" / "differential"))
    import strategies

    return Path(str(strategies.declared_class_folder(name, Path(tempfile.gettempdir()) / "mldebug-declared-class")))


# suites whose settings are many: smaller files, the settings taken in turn (each setting meets most shapes)
FILE_ROWS = {"trl-sft": 40, "trl-sft-classes": 10}  # the classes: 10-row files, so each shape meets 3 settings


def assemble(suite: str, seed: int, drawn: list[tuple[str, list[dict]]], size: int = 200) -> list[dict]:
    """Drawn (shape, rows) merged into files of about ``size`` rows of one shape (one framework run each), each with
    a tokenizer and a setting picked with the seed."""
    pick = random.Random(seed)
    size = FILE_ROWS.get(suite, size)
    in_turn = random.Random(seed).sample(list(SUITES[suite]), len(SUITES[suite])) if suite in FILE_ROWS else None
    by_shape: dict[str, list[dict]] = {}
    for shape, rows in drawn:
        by_shape.setdefault(shape, []).extend(rows)
    special = SHAPE_SETTINGS.get(suite, {})
    shape_only = {name for names in special.values() for name in names} - {"defaults", "train_on_eos_all"}
    out = []
    for shape in sorted(by_shape):
        rows = by_shape[shape]
        names = list(special.get(shape, [n for n in SUITES[suite] if n not in shape_only]))
        for start in range(0, len(rows), size):
            setting = in_turn[len(out) % len(in_turn)] if in_turn else pick.choice(names)
            out.append({"id": len(out), "shape": shape, "tokenizer": pick.choice(SUITE_TOKENIZERS.get(suite, TOKENIZERS)),
                        "setting": setting,
                        "config": SUITES[suite][setting][0], "rows": rows[start:start + size]})
    return out


# ---------------------------------------------------------------------------------------------------- framework side


def frame(suite: str, groups: list[dict]) -> dict:
    """Run the framework on every group (in the framework's own Python): group id -> result."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import datasets

        datasets.disable_progress_bars()
    except ImportError:
        pass
    runner = {"trl": _trl, "llamafactory": _lf, "axolotl": _axolotl, "unsloth": _unsloth}[owner(suite)]
    if suite == UNSLOTH_TRL:
        runner = _unsloth_trl
    results = {}
    for group in groups:
        results[str(group["id"])] = _with_row_refusals(runner, suite, group)
    return {"versions": _versions("trl" if suite == UNSLOTH_TRL else owner(suite)), "results": results}


def _with_row_refusals(runner, suite: str, group: dict) -> dict:
    """The group's result; when the framework raises on the group, which rows it refuses: the first and last row
    alone first (the same error on both: the dataset as a whole is refused, e.g. a missing column), else halves."""

    def attempt(numbers: list[int]):
        try:
            return runner(suite, group, [group["rows"][n] for n in numbers], numbers), None
        except Exception as exc:  # noqa: BLE001 - the framework's refusal is the golden
            return None, f"{type(exc).__name__}: {str(exc)[:300]}"

    def bisect(numbers: list[int], error: str) -> list[dict]:
        if len(numbers) == 1:
            return [{"row": numbers[0], "error": error}]
        out = []
        for half in (numbers[: len(numbers) // 2], numbers[len(numbers) // 2:]):
            got, failed = attempt(half)
            out += got["rows"] if got else bisect(half, failed)
        return out

    everything = list(range(len(group["rows"])))
    got, whole = attempt(everything)
    if got:
        return got
    ends = [attempt([n]) for n in {everything[0], everything[-1]}]
    # Unsloth's rows are all conversations: a refusal there is a row's (its tool call ids), never a missing column
    if suite != UNSLOTH_TRL and all(failed == whole for _, failed in ends):
        return {"error": whole, "rows": [{"row": n, "error": whole} for n in everything]}
    return {"error": whole, "rows": bisect(everything, whole)}


def _versions(framework: str) -> dict:
    from importlib.metadata import version

    names = {"trl": ("trl", "transformers", "tokenizers", "datasets"),
             "llamafactory": ("llamafactory", "transformers", "tokenizers", "datasets"),
             "axolotl": ("transformers", "tokenizers", "datasets"),
             "unsloth": ("unsloth_zoo", "transformers", "tokenizers")}[framework]
    out = {n: version(n) for n in names}
    if framework == "axolotl":
        out["axolotl"] = "0.19.0"
    return out


_TOKENIZER_CACHE: dict = {}


def _tokenizer(name: str):
    from transformers import AutoTokenizer

    if name not in _TOKENIZER_CACHE:
        _TOKENIZER_CACHE[name] = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR / name))
    return _TOKENIZER_CACHE[name]


def _trl(suite: str, group: dict, rows: list[dict], numbers: list[int]) -> dict:
    if suite.startswith("trl-sft"):
        return _trl_sft(group, rows, numbers)
    import trl_preference_goldens as pref

    task = suite.split("-")[1]
    tok = _tokenizer(group["tokenizer"])
    tagged = [{**r, "_row": n} for r, n in zip(rows, numbers)]
    with tempfile.TemporaryDirectory() as workdir:
        model = _preference_model(tok, workdir)
        got = pref.RUNNERS[task](tok, model, tagged, dict(group["config"]), workdir)
    out = []
    for r in got["rows"]:
        if task in ("dpo", "orpo"):
            out.append({"row": r["row"], "ids": r["chosen"]["input_ids"], "labels": r["chosen"]["labels"],
                        "ids2": r["rejected"]["input_ids"], "labels2": r["rejected"]["labels"]})
        elif task == "kto":
            out.append({"row": r["row"], "ids": r["input_ids"], "labels": r["labels"], "label": r["label"]})
        else:
            out.append({"row": r["row"], "ids": r["prompt_input_ids"]})
    kept = {r["row"] for r in out}
    return {"rows": out + [{"row": n, "dropped": True} for n in numbers if n not in kept]}


_LF_TOKENIZERS: dict = {}


def _lf(suite: str, group: dict, rows: list[dict], numbers: list[int]) -> dict:
    """LLaMA-Factory 0.9.5's converter and Supervised/PairwiseDatasetProcessor, one row at a time (as
    tools/llamafactory_goldens.py runs them); a ValueError from the settings refuses the group."""
    import llamafactory_goldens

    if "torchaudio" not in sys.modules:
        llamafactory_goldens._without_audio()
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.pairwise import PairwiseDatasetProcessor
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    _pin_llama3_date()
    template, tokenizer_name = group["tokenizer"].split("@")
    ranking = suite.endswith("pairwise")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
        (Path(tmp) / "dataset_info.json").write_text(json.dumps({"d": lf_dataset_info(group["shape"], ranking, rows)}))
        data_args = DataArguments(template=template or None, dataset_dir=tmp, **group["config"])
        key = (template, tokenizer_name)  # one load per template and tokenizer (its fixes depend on those only)
        if key not in _LF_TOKENIZERS:
            folder = str(tokenizer_folder(tokenizer_name))
            _LF_TOKENIZERS[key] = load_tokenizer(ModelArguments(model_name_or_path=folder))["tokenizer"]
        tokenizer = _LF_TOKENIZERS[key]
        chosen = get_template_and_fix_tokenizer(tokenizer, data_args)
        processor = (PairwiseDatasetProcessor if ranking else SupervisedDatasetProcessor)(
            template=chosen, tokenizer=tokenizer, processor=None, data_args=data_args)
        [attr] = get_dataset_list(["d"], tmp)
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        out = []
        for n, example in zip(numbers, load_dataset("json", data_files=f"{tmp}/rows.json", split="train")):
            try:
                encoded = processor.preprocess_dataset({key: [value] for key, value in converter(example).items()})
            except (ValueError, RuntimeError) as exc:  # the template raises on the row: LLaMA-Factory stops
                out.append({"row": n, "error": f"{type(exc).__name__}: {exc}"})
                continue
            first = "chosen_input_ids" if ranking else "input_ids"
            if not encoded[first]:
                out.append({"row": n, "dropped": True})
            elif ranking:
                out.append({"row": n, "ids": encoded["chosen_input_ids"][0], "labels": encoded["chosen_labels"][0],
                            "ids2": encoded["rejected_input_ids"][0], "labels2": encoded["rejected_labels"][0]})
            else:
                out.append({"row": n, "ids": encoded["input_ids"][0], "labels": encoded["labels"][0]})
    return {"rows": out}


def lf_dataset_info(shape: str, ranking: bool, rows: list[dict]) -> dict:
    """The dataset_info.json entry for a generated shape (LLaMA-Factory's column names), naming only the columns the
    rows have (a named column the file lacks is a KeyError in LLaMA-Factory's converter)."""
    present = {key for row in rows for key in row}
    if shape.startswith("openai"):  # role/content messages (LLaMA-Factory v1's demo rows read by v0's converter)
        tags = {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                "system_tag": "system"}
        return {"file_name": "rows.json", "formatting": "sharegpt", "ranking": ranking,
                "columns": {"messages": "messages"}, "tags": tags}
    if "alpaca" in shape:
        columns = {"prompt": "instruction", "query": "input", "system": "system", "history": "history",
                   "chosen": "chosen", "rejected": "rejected", "response": "output"}
        entry = {"file_name": "rows.json", "ranking": ranking}
    else:
        columns = {"messages": "conversations", "system": "system", "tools": "tools", "chosen": "chosen",
                   "rejected": "rejected"}
        entry = {"file_name": "rows.json", "formatting": "sharegpt", "ranking": ranking}
    return {**entry, "columns": {k: v for k, v in columns.items() if v in present}}


def _pin_llama3_date() -> None:
    """Llama 3's tool prompt writes today's date: pin it (TOOL_DATE) as mldebug's tool_date option does."""
    from datetime import datetime

    import llamafactory.data.tool_utils as tool_utils

    class Fixed(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ARG003
            return datetime.strptime(TOOL_DATE, "%d %b %Y")

    tool_utils.datetime = Fixed


_AXOLOTL: dict = {}


def _axolotl(suite: str, group: dict, rows: list[dict], numbers: list[int]) -> dict:
    """axolotl 0.19.0's chat_template strategy (the dataset entry read through its SFTDataset schema), per row."""
    if not _AXOLOTL:
        import axolotl_goldens

        chat_template, dict_default = axolotl_goldens.load_axolotl(AXOLOTL_WHEEL)
        wrappers, keep = axolotl_goldens.load_prompters(AXOLOTL_WHEEL)  # its dataset dispatch and length filter
        from axolotl.utils.schemas.datasets import SFTDataset

        _AXOLOTL.update(chat_template=chat_template, DictDefault=dict_default, SFTDataset=SFTDataset,
                        wrappers=wrappers, keep=lambda ids: bool(keep({"input_ids": ids}, sequence_len=100_000)))
        _AXOLOTL["clock"] = _pinned_clock()
        _AXOLOTL["clock"].__enter__()  # for the whole framework process
    from transformers import AutoTokenizer

    template, name = _template_and_tokenizer(group)
    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR / name))
    top, entry = _axolotl_config(group, template)
    cfg = _AXOLOTL["DictDefault"]({"sequence_len": 100_000, "train_on_inputs": False, **top})
    if "type" in entry:
        return _axolotl_typed(tokenizer, cfg, entry, rows, numbers)
    ds_cfg = _AXOLOTL["SFTDataset"](path="rows.json", type="chat_template", **entry).model_dump(exclude_none=True)
    strategy = _AXOLOTL["chat_template"].load(tokenizer, cfg, _AXOLOTL["DictDefault"](ds_cfg))
    out = []
    for n, row in zip(numbers, rows):
        try:
            result = strategy.tokenize_prompt(json.loads(json.dumps(row)))
        except Exception as exc:  # noqa: BLE001 - the template refuses the row: axolotl stops there
            out.append({"row": n, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        kept = _AXOLOTL["keep"](list(result["input_ids"]))  # axolotl drops rows outside [min_sample_len, sequence_len]
        out.append({"row": n, "ids": list(result["input_ids"]), "labels": list(result["labels"])} if kept else
                   {"row": n, "dropped": True})
    return {"rows": out}


def _axolotl_typed(tokenizer, cfg, entry: dict, rows: list[dict], numbers: list[int]) -> dict:
    """axolotl's other dataset types through its own dispatch (``get_dataset_wrapper``: the prompter's
    ``tokenize_prompt`` mapped over the rows, as tools/axolotl_goldens.py runs it), all rows in one call (the columns
    are the dataset's); a type that splits or drops rows is run one row at a time to tell whose is whose."""
    from datasets import Dataset

    ds_cfg = _AXOLOTL["DictDefault"]({"path": "rows.json", **entry})
    base, style = (ds_cfg.type.split(":") + [None])[:2]

    def wrapped(part: list[dict]) -> list[dict]:
        got, _ = _AXOLOTL["wrappers"].get_dataset_wrapper(ds_cfg, tokenizer, cfg, base, Dataset.from_list(part), style)
        return [{"ids": list(r["input_ids"]), "labels": list(r["labels"])} if _AXOLOTL["keep"](list(r["input_ids"]))
                else {"dropped": True} for r in got]

    every = wrapped(rows)
    if len(every) == len(rows):
        return {"rows": [{"row": n, **r} for n, r in zip(numbers, every)]}
    out = []
    for n, row in zip(numbers, rows):
        alone = wrapped([row])
        out.append({"row": n, **alone[0]} if len(alone) == 1 else
                   {"row": n, "dropped": True} if not alone else {"row": n, "error": f"split into {len(alone)} rows"})
    return {"rows": out}


def _template_and_tokenizer(group: dict) -> tuple[str | None, str]:
    """A group's "template@tokenizer" (axolotl, LLaMA-Factory) or plain tokenizer: (template or None, tokenizer)."""
    template, _, name = group["tokenizer"].rpartition("@")
    return template or None, name


def _axolotl_config(group: dict, template: str | None) -> tuple[dict, dict]:
    """(top-level keys, the dataset entry) of an axolotl group: train_on_inputs is top-level; a named template is set
    at the top and copied into the chat_template entry, as axolotl's normalize_cfg_datasets does."""
    top = {k: v for k, v in group["config"].items() if k == "train_on_inputs"}
    entry = {k: v for k, v in group["config"].items() if k != "train_on_inputs"}
    if template:
        top["chat_template"] = entry["chat_template"] = template
    return top, entry


@contextmanager
def _pinned_clock():
    """transformers' strftime_now reads datetime.now from its module: render at CLOCK (mistral_v7_tekken's date)."""
    from datetime import datetime

    import transformers.utils.chat_template_utils as chat_utils

    instant = datetime.fromisoformat(CLOCK)

    class Fixed(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ARG003 - datetime.now's signature
            return instant

    original, chat_utils.datetime = chat_utils.datetime, Fixed
    try:
        yield
    finally:
        chat_utils.datetime = original


def _unsloth(suite: str, group: dict, rows: list[dict], numbers: list[int]) -> dict:
    """unsloth_zoo's train_on_responses_only on the ids TRL 1.16.0 prepared (group["trl"], from the global Python)."""
    import unsloth_goldens
    from transformers import AutoTokenizer
    from unsloth_zoo.dataset_utils import train_on_responses_only

    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR / group["tokenizer"]))
    instruction, response = unsloth_goldens.PARTS[group["tokenizer"]]
    if group["setting"] == "wrong_response_part":
        response = "<|assistant|>\n"

    mask = train_on_responses_only(None, instruction_part=instruction, response_part=response, tokenizer=tokenizer,
                                   return_function=True, last_response_only=group["setting"] == "last_response_only")
    out = []
    by_row = {r["row"]: r for r in group["trl"]}
    for n in numbers:
        prepared = by_row.get(n)
        if prepared is None or "ids" not in prepared:
            out.append({"row": n, **({"dropped": True} if prepared and prepared.get("dropped") else
                                     {"error": (prepared or {}).get("error", "TRL refused the row")})})
            continue
        labels = mask({"input_ids": [prepared["ids"]]})["labels"][0]
        if all(t == IGNORE for t in labels):
            out.append({"row": n, "dropped": True})
        else:
            out.append({"row": n, "ids": prepared["ids"], "labels": list(labels)})
    return {"rows": out}


UNSLOTH_TRL = "unsloth-trl"  # the TRL half of the Unsloth suite (global Python): SFTTrainer's prepared ids
_SFT_TRAINERS: dict = {}


def _unsloth_trl(suite: str, group: dict, rows: list[dict], numbers: list[int]) -> dict:
    """TRL 1.16.0's SFTTrainer prepares the Unsloth suite's rows (Unsloth trains through it): one trainer per
    tokenizer and config, built on a one-row conversation (SFTTrainer.__init__ reads only whether the first row is
    conversational, and every row here is), then each group through that trainer's own ``_prepare_dataset`` (what
    its constructor calls on ``train_dataset``) with its own arguments and tokenizer, and each prepared row through
    its own data collator."""
    import trl_goldens
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    key = (group["tokenizer"], json.dumps(group["config"], sort_keys=True))
    if key not in _SFT_TRAINERS:
        tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR / group["tokenizer"]))
        folder = tempfile.mkdtemp(prefix="mldebug-diff-sft-")
        first = Path(folder) / "first.json"
        first.write_text(json.dumps([{"messages": [{"role": "user", "content": "hi"},
                                                   {"role": "assistant", "content": "ok"}]}]), encoding="utf-8")
        config = SFTConfig(output_dir=folder, report_to="none", use_cpu=True, remove_unused_columns=False,
                           **group["config"])
        _SFT_TRAINERS[key] = SFTTrainer(model=trl_goldens.tiny_model(tokenizer), args=config, processing_class=tokenizer,
                                        train_dataset=load_dataset("json", data_files=str(first), split="train",
                                                                   cache_dir=folder))
    trainer = _SFT_TRAINERS[key]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.json"
        path.write_text(json.dumps(rows), encoding="utf-8")
        dataset = load_dataset("json", data_files=str(path), split="train", cache_dir=tmp)
        dataset = dataset.add_column("mldebug_row", numbers)
        prepared = trainer._prepare_dataset(dataset, trainer.processing_class, trainer.args, trainer.args.packing,
                                            None, "train")
        out = []
        for example in prepared:
            batch = trainer.data_collator([{"input_ids": example["input_ids"], "labels": example["labels"]}])
            out.append({"row": example["mldebug_row"], "ids": batch["input_ids"][0].tolist(),
                        "labels": batch["labels"][0].tolist()})
    kept = {r["row"] for r in out}
    return {"rows": out + [{"row": n, "dropped": True} for n in numbers if n not in kept]}


_MODELS: dict = {}


def _preference_model(tok, workdir: str) -> str:
    import shutil

    import trl_preference_goldens as pref

    key = len(tok)
    if key not in _MODELS:
        folder = tempfile.mkdtemp(prefix="mldebug-diff-model-")
        _MODELS[key] = pref.tiny_model(len(tok), folder)
    target = f"{workdir}/model"
    shutil.copytree(_MODELS[key], target)
    return target


def _trl_sft(group: dict, rows: list[dict], numbers: list[int]) -> dict:
    """TRL 1.16.0's SFTTrainer, one per tokenizer and setting (tools/differential_trl_sft.py)."""
    import differential_trl_sft

    return differential_trl_sft.prepare(TOKENIZER_DIR / group["tokenizer"], group["setting"], dict(group["config"]),
                                        rows, numbers)


# ---------------------------------------------------------------------------------------------------- mldebug side


def ours(suite: str, group: dict, folder: Path) -> dict:
    """mldebug's rows for a group: {"rows": [...], "errors": {row or None: [code: message]}, "stopped": msg}."""
    from mldebug_cli.core.errors import InputError, UsageError
    from mldebug_cli.pipelines.inspect import build_report

    path = folder / f"group-{group['id']}.json"
    path.write_text(json.dumps(group["rows"], ensure_ascii=False), encoding="utf-8")
    if suite == "llamafactory-pairwise":
        return _ours_lf_pairs(group, path)
    try:
        if owner(suite) == "axolotl":
            with _pinned_clock():
                report = build_report(_axolotl_options(group, path))
        else:
            report = build_report(inspect_options(suite, group, path))
    except (InputError, UsageError) as exc:
        return {"stopped": str(exc)}
    errors: dict = {}
    for f in report.findings:
        if f.severity.value == "error":
            errors.setdefault(f.location.row, []).append(f"{f.code}: {f.message}")
    out = []
    for view in report.details["rows"]:
        item: dict = {"row": view["row"]}
        if view.get("dropped"):
            item["dropped"] = True
        elif "chosen" in view:
            for side, suffix in (("chosen", ""), ("rejected", "2")):
                part = view[side] or {}
                if part.get("dropped"):
                    item["dropped"] = True
                item[f"ids{suffix}"], item[f"labels{suffix}"] = part.get("input_ids"), part.get("labels")
        elif "prompt_input_ids" in view:
            item["ids"] = view["prompt_input_ids"]
        else:
            item["ids"], item["labels"] = view.get("input_ids"), view.get("labels")
            if "label" in view:
                item["label"] = view["label"]
        if view.get("error") and not item.get("dropped"):  # a dropped row's error is why the framework drops it
            item["error"] = view["error"]
        out.append(item)
    dropped = {f.location.row for f in report.findings if f.code == "DP005"}
    for item in out:
        if item["row"] in dropped:
            item["dropped"] = True
    return {"rows": out, "errors": {str(k): v for k, v in errors.items()}}


def inspect_options(suite: str, group: dict, path: Path):
    """The inspect-data options that ask mldebug for what the group's framework setting does."""
    from mldebug_cli.pipelines.inspect import InspectOptions

    base = {"dataset": str(path), "rows": tuple(range(len(group["rows"])))}
    extra = SUITES[suite][group["setting"]][1]
    name = group["tokenizer"].split("@")[-1]
    if owner(suite) == "trl":
        if "trl" in extra:
            from mldebug_cli.frameworks.trl.framework import TrlOptions

            extra = {**{k: v for k, v in extra.items() if k != "trl"}, "framework_options": TrlOptions(**extra["trl"])}
        return InspectOptions(tokenizer=str(TOKENIZER_DIR / name), framework="trl", **base, **extra)
    if owner(suite) == "llamafactory":
        from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions

        template = group["tokenizer"].split("@")[0] or None
        data_format = "alpaca" if "alpaca" in group["shape"] else None if group["shape"].startswith("openai") else "sharegpt"
        return InspectOptions(tokenizer=str(tokenizer_folder(name)), framework="llama-factory", data_format=data_format,
                              framework_options=LlamaFactoryOptions(template=template, tool_date=TOOL_DATE,
                                                                    **group["config"]), **base)
    if owner(suite) == "axolotl":
        from mldebug_cli.frameworks.axolotl.chat_template import AxolotlOptions

        return InspectOptions(tokenizer=str(TOKENIZER_DIR / name), framework="axolotl",
                              framework_options=AxolotlOptions(**extra), **base)
    from mldebug_cli.frameworks.unsloth.framework import Flags, ResponseParts

    sys.path.insert(0, str(ROOT / "tools"))
    import unsloth_goldens

    instruction, response = unsloth_goldens.PARTS[name]
    if group["setting"] == "wrong_response_part":
        response = WRONG_RESPONSE_PART
    parts = ResponseParts(instruction, response)  # last_response_only is --train-on last, as the CLI asks for it
    return InspectOptions(tokenizer=str(TOKENIZER_DIR / name), framework="unsloth", framework_flags=Flags(parts),
                          train_on="last" if extra.get("last_response_only") else None,
                          max_length=extra.get("max_length"), **base)


def _axolotl_options(group: dict, path: Path):
    """What mldebug reads from the group's axolotl config (written as YAML next to the rows, read by mldebug's own
    config reader, as preflight reads it): the named template, the dataset entry's settings."""
    import yaml

    from mldebug_cli.frameworks.selector import read_plan
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.pipelines.preflight import _as_configured
    from mldebug_cli.sources.config_file import load_config

    template, name = _template_and_tokenizer(group)
    top, entry = _axolotl_config(group, template)
    entry.pop("chat_template", None)
    config = {"base_model": str(TOKENIZER_DIR / name), "sequence_len": 100_000, "micro_batch_size": 1, **top,
              "datasets": [{"path": path.name, "type": "chat_template", **entry}]}
    config_path = path.with_suffix(".yaml")
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    plan = read_plan(load_config(config_path), "axolotl")
    base = InspectOptions(dataset=str(path), tokenizer=str(TOKENIZER_DIR / name), rows=tuple(range(len(group["rows"]))))
    return _as_configured(base, plan, plan.datasets[0])


def _ours_lf_pairs(group: dict, path: Path) -> dict:
    """LLaMA-Factory pairwise rows through mldebug's pair encoder (what inspect-data shows for ranking rows)."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.frameworks.llama_factory.data import InvalidRow
    from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions, row_profile
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.sources.tokenizer import load_tokenizer

    template, name = group["tokenizer"].split("@")
    options = LlamaFactoryOptions(template=template or None, tool_date=TOOL_DATE, **group["config"])
    folder = str(TOKENIZER_DIR / name)
    try:
        rows = row_profile(InspectOptions(dataset=str(path), tokenizer=folder, framework_options=options),
                           load_tokenizer(folder), "alpaca" if "alpaca" in group["shape"] else "sharegpt")
    except InputError as exc:
        return {"stopped": str(exc)}
    out = []
    for n, row in enumerate(group["rows"]):
        try:
            chosen, rejected = rows.encode_pair(row)
        except InvalidRow:
            out.append({"row": n, "dropped": True})
            continue
        except Exception as exc:  # noqa: BLE001 - the template raised: mldebug reports the row
            out.append({"row": n, "error": str(exc)})
            continue
        out.append({"row": n, "ids": chosen.input_ids, "labels": chosen.labels, "ids2": rejected.input_ids,
                    "labels2": rejected.labels})
    return {"rows": out, "errors": {}}


# ---------------------------------------------------------------------------------------------------- comparison


def digest(item: dict) -> str:
    """The framework's (or mldebug's) row, as a short digest of its ids and labels."""
    if item.get("dropped"):
        return "dropped"
    keys = ("ids", "labels", "ids2", "labels2", "label")
    text = json.dumps([item.get(k) for k in keys], separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def verdicts(group: dict, theirs: dict, mine: dict) -> list[tuple[int, str, str]]:
    """(row, verdict, detail) per row: equal, refusal, flagged, silent."""
    out = []
    stopped = mine.get("stopped")
    errors = mine.get("errors", {})
    dataset_errors = errors.get("None", [])
    refused_rows = {r["row"]: r["error"] for r in theirs.get("rows", []) if "error" in r}
    want = {r["row"]: r.get("digest") or digest(r) for r in theirs.get("rows", []) if "error" not in r}
    got = {r["row"]: r for r in mine.get("rows", [])}
    for n in range(len(group["rows"])):
        row_errors = errors.get(str(n), []) + dataset_errors
        if n in refused_rows or ("error" in theirs and n not in want):
            reason = refused_rows.get(n) or theirs["error"]
            if stopped or row_errors or (n in got and got[n].get("error")):
                out.append((n, "refusal", f"{reason[:80]} -> {(stopped or (row_errors or [got[n]['error']])[0])[:100]}"))
            else:
                out.append((n, "silent", f"framework refuses ({reason[:100]}); mldebug does not say so"))
            continue
        if stopped:
            out.append((n, "silent", f"mldebug stops ({stopped[:100]}); the framework trains the row"))
            continue
        mine_digest = digest(got[n]) if n in got and not got[n].get("error") else "error"
        if mine_digest == want[n]:
            out.append((n, "equal", ""))
        elif row_errors or (n in got and got[n].get("error")):
            out.append((n, "flagged", (row_errors or [got[n].get("error")])[0][:120]))
        else:
            out.append((n, "silent", f"framework {want[n]}, mldebug {mine_digest}"))
    return out


def run(suite: str, seed: int, groups: int, write: bool) -> Counter:
    drawn = generate(suite, seed, groups)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.time()
        if suite == "unsloth":  # TRL's SFTTrainer prepares the ids (global Python), Unsloth masks them (its venv)
            trl_groups = [{**g, "config": SUITES["unsloth"][g["setting"]][0]} for g in drawn]
            (Path(tmp) / "in.json").write_text(json.dumps({"suite": UNSLOTH_TRL, "groups": trl_groups}))
            subprocess.run([sys.executable, __file__, "frame", UNSLOTH_TRL, f"{tmp}/in.json", f"{tmp}/trl.json"],
                           check=True, env={**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1"})
            trl_side = json.loads((Path(tmp) / "trl.json").read_text())
            prepared = trl_side["results"]
            for g in drawn:
                g["trl"] = prepared[str(g["id"])]["rows"]
        (Path(tmp) / "in.json").write_text(json.dumps({"suite": suite, "groups": drawn}), encoding="utf-8")
        env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "UNSLOTH_ZOO_DISABLE_GPU_INIT": "1"}
        if owner(suite) in ("llamafactory", "unsloth"):
            env.pop("PYTHONPATH", None)  # the venv's own packages, not mldebug's
        kept = Path(os.environ["MLDEBUG_FRAMED"]) if os.environ.get("MLDEBUG_FRAMED") else None
        if kept is not None and kept.exists():  # the framework side of an earlier run with the same seed and groups
            framed = json.loads(kept.read_text(encoding="utf-8"))
        else:
            subprocess.run([PYTHONS[owner(suite)], __file__, "frame", suite, f"{tmp}/in.json", f"{tmp}/out.json"],
                           check=True, env=env)
            framed = json.loads((Path(tmp) / "out.json").read_text(encoding="utf-8"))
            if kept is not None:
                kept.write_text(json.dumps(framed), encoding="utf-8")
        if suite == "unsloth":  # the ids are TRL's: its versions too
            framed["versions"].update({f"{k} (ids)": v for k, v in trl_side["versions"].items()})
        print(f"{suite}: framework side {time.time() - started:.0f}s", file=sys.stderr)
        return compare_and_store(suite, seed, drawn, framed, write, groups)


def compare_and_store(suite: str, seed: int, drawn: list[dict], framed: dict, write: bool,
                      groups: int | None = None) -> Counter:
    counts: Counter = Counter()
    losses: Counter = Counter()
    stored = []
    with tempfile.TemporaryDirectory() as tmp:
        for group in drawn:
            theirs = framed["results"][str(group["id"])]
            mine = ours(suite, group, Path(tmp))
            named = {row for row, errors in mine.get("errors", {}).items() if any(e.startswith(LOSS) for e in errors)}
            if named:  # rows whose text the run's tokenizer cannot carry, named on the row (DS060)
                losses[group["tokenizer"].split("@")[-1]] += len(named)
            for row, verdict, detail in verdicts(group, theirs, mine):
                counts[verdict] += 1
                if verdict in ("silent", "flagged"):
                    print(f"{suite} group {group['id']} ({group['shape']}, {group['tokenizer']}, {group['setting']}) "
                          f"row {row}: {verdict}: {detail}", file=sys.stderr)
            stored.append({**{k: v for k, v in group.items() if k != "trl"}, "framework": _stored_result(theirs)})
    for name, n in sorted(losses.items()):
        rows = sum(len(g["rows"]) for g in drawn if g["tokenizer"].split("@")[-1] == name)
        print(f"{suite}: {name}: {LOSS} on {n} of {rows} rows", file=sys.stderr)
    if write:
        OUT.mkdir(parents=True, exist_ok=True)
        document = {"suite": suite, "seed": seed, "versions": framed["versions"], "groups": stored,
                    "command": f"python tools/differential.py run {suite} --seed {seed} --groups {groups or len(drawn)} --write"}
        with gzip.open(OUT / f"{suite}.json.gz", "wt", encoding="utf-8") as handle:
            json.dump(document, handle, ensure_ascii=False, separators=(",", ":"))
    return counts


def _stored_result(theirs: dict) -> dict:
    out: dict = {}
    if "error" in theirs:
        out["error"] = theirs["error"]
    out["rows"] = [{"row": r["row"], "error": r["error"]} if "error" in r else {"row": r["row"], "digest": digest(r)}
                   for r in theirs.get("rows", [])]
    return out


def replay(document: dict) -> Counter:
    """Compare mldebug with the stored framework results (no framework needed)."""
    counts: Counter = Counter()
    silent = []
    with tempfile.TemporaryDirectory() as tmp:
        for group in document["groups"]:
            mine = ours(document["suite"], group, Path(tmp))
            for row, verdict, detail in verdicts(group, group["framework"], mine):
                counts[verdict] += 1
                if verdict == "silent":
                    silent.append(f"group {group['id']} row {row}: {detail}")
    counts["silent_details"] = silent  # type: ignore[assignment]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("suite", choices=sorted(SUITES))
    r.add_argument("--seed", type=int, default=21)
    r.add_argument("--groups", type=int, default=500)
    r.add_argument("--write", action="store_true")
    f = sub.add_parser("frame")
    f.add_argument("suite")
    f.add_argument("input")
    f.add_argument("output")
    sub.add_parser("table")
    args = parser.parse_args()
    if args.command == "frame":
        document = json.loads(Path(args.input).read_text(encoding="utf-8"))
        Path(args.output).write_text(json.dumps(frame(args.suite, document["groups"])), encoding="utf-8")
        return
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.disable(logging.WARNING)
    if args.command == "run":
        counts = run(args.suite, args.seed, args.groups, args.write)
        print(f"{args.suite} seed {args.seed}: {sum(counts.values())} cases, " +
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return
    print("| suite | seed | cases | equal | refusals named | flagged | silent |\n|---|---|---|---|---|---|---|")
    for path in sorted(OUT.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            document = json.load(handle)
        counts = replay(document)
        cases = sum(v for k, v in counts.items() if k != "silent_details")
        print(f"| {document['suite']} | {document['seed']} | {cases} | {counts['equal']} | {counts['refusal']} | "
              f"{counts['flagged']} | {counts['silent']} |")


if __name__ == "__main__":
    main()
