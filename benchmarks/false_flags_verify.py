"""The real frameworks' own data preparation on the false-flag benchmark's cases: the facts behind its verdicts.

    # LLaMA-Factory 0.9.5, in its own venv (its converter and Supervised/Pairwise/FeedbackDatasetProcessor):
    MLDEBUG_CORPUS=... HF_HUB_OFFLINE=1 /work/venvs/lf095/bin/python benchmarks/false_flags_verify.py lf
    # TRL 1.16 (the global Python): its prompt extraction, tokenization, prompt filter and collator; the SFT rows
    # through the tokenizer's apply_chat_template exactly as SFTTrainer calls it (tools parsed from JSON):
    MLDEBUG_CORPUS=... python benchmarks/false_flags_verify.py trl
    # axolotl 0.19.0 (its wheel unpacked in /work/venvs/axolotl-whl): the chat_template strategy:
    MLDEBUG_CORPUS=... python benchmarks/false_flags_verify.py axolotl

Each prints, per case and tokenizer, the rows on which the framework itself does what a flag says (loses trained
tokens at its default limit, cuts a prompt, drops a row, raises, leaves a tool call or the end-of-turn token out,
trains a special token written as text). benchmarks/false_flags.py's VERIFIED table holds these counts: a flag
whose count differs from them is reported as false.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools"))
import false_flags as ff  # noqa: E402

IGNORE = -100
LF_CASES = {"glaive_toolcall_en_demo": "sft", "reason_tool_use_demo_50": "sft", "dpo_en_demo": "pair",
            "kto_en_demo": "kto"}
# what a LLaMA-Factory user writes in dataset_info.json for the v1 file (0.9.5 ships no entry for it)
V1_ENTRY = {"file_name": "reason_tool_use_demo_50.jsonl", "formatting": "sharegpt",
            "columns": {"messages": "messages", "tools": "tools"},
            "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                     "observation_tag": "tool", "function_tag": "function_call", "system_tag": "system"}}


def _specials(tok) -> dict[str, int]:
    """Every special token the tokenizer parses out of text (its added tokens marked special: Llama 3's
    <|eot_id|> and Phi-3's <|end|> and <|user|> are among them, not in all_special_tokens)."""
    return {t.content: i for i, t in tok.added_tokens_decoder.items() if t.special}


def _trained(labels: list[int]) -> int:
    return sum(1 for x in labels if x != IGNORE)


# ----------------------------------------------------------------------------------------------- LLaMA-Factory


def _lf_rows(name: str, kind: str, tokenizer: str, cutoff: int) -> tuple[list[dict], object]:
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.feedback import FeedbackDatasetProcessor
    from llamafactory.data.processor.pairwise import PairwiseDatasetProcessor
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    info = json.loads((ff.LF / "dataset_info.json").read_text(encoding="utf-8"))
    entry = info.get(name) or V1_ENTRY
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(ff.LF / entry["file_name"], Path(tmp) / entry["file_name"])
        (Path(tmp) / "dataset_info.json").write_text(json.dumps({name: entry}), encoding="utf-8")
        data_args = DataArguments(template=ff.LF_TEMPLATES[tokenizer], dataset_dir=tmp, cutoff_len=cutoff)
        tok = load_tokenizer(ModelArguments(model_name_or_path=str(ff.TOKENIZERS[tokenizer])))["tokenizer"]
        template = get_template_and_fix_tokenizer(tok, data_args)
        processor = {"sft": SupervisedDatasetProcessor, "pair": PairwiseDatasetProcessor,
                     "kto": FeedbackDatasetProcessor}[kind](template=template, tokenizer=tok, processor=None,
                                                             data_args=data_args)
        [attr] = get_dataset_list([name], tmp)
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        for n, example in enumerate(load_dataset("json", data_files=f"{tmp}/{entry['file_name']}", split="train")):
            try:
                encoded = processor.preprocess_dataset({k: [v] for k, v in converter(example).items()})
            except Exception as exc:  # noqa: BLE001 - LLaMA-Factory's refusal is the fact
                out.append({"row": n, "error": f"{type(exc).__name__}: {str(exc)[:100]}"})
                continue
            ids_key, labels_key = ("chosen_input_ids", "chosen_labels") if kind == "pair" else ("input_ids", "labels")
            out.append({"row": n, "dropped": True} if not encoded[ids_key] else
                       {"row": n, "ids": encoded[ids_key][0], "labels": encoded[labels_key][0]})
    return out, tok


def lf() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import llamafactory_goldens

    llamafactory_goldens._without_audio()
    for name, kind in LF_CASES.items():
        raw = ff._read(ff.LF / (name + (".jsonl" if name.startswith("reason") else ".json")))
        for tokenizer in ff.TOKENIZERS:
            limited, tok = _lf_rows(name, kind, tokenizer, 2048)
            whole, _ = _lf_rows(name, kind, tokenizer, 10**6)
            errors = [r["row"] for r in limited if "error" in r]
            facts = {"raises": len(errors), "dropped": sum(bool(r.get("dropped")) for r in limited)}
            pairs = [(a, b) for a, b in zip(limited, whole) if "ids" in a and "ids" in b]
            if kind == "sft":
                facts["trained tokens lost"] = sum(_trained(a["labels"]) < _trained(b["labels"]) for a, b in pairs)
            else:
                facts["prompt cut"] = sum(a["labels"].count(IGNORE) < b["labels"].count(IGNORE) for a, b in pairs)
            if kind == "kto":
                facts["special token of reply text trained"] = _specials_trained(raw, limited, tok)
            print(f"lf/{name:28} {tokenizer:13} {json.dumps(facts)}"
                  + (f" e.g. {next(r['error'] for r in limited if 'error' in r)}" if errors else ""), flush=True)


def _specials_trained(raw: list[dict], rows: list[dict], tok) -> int:
    """Rows whose reply text holds a special token's literal and whose trained labels hold that token's id."""
    specials = _specials(tok)
    count = 0
    for source, row in zip(raw, rows):
        reply = source["messages"][-1]["content"]
        trained = {i for i, label in zip(row.get("ids", []), row.get("labels", [])) if label != IGNORE}
        count += any(text in reply and ident in trained for text, ident in specials.items())
    return count


# ----------------------------------------------------------------------------------------------------------- TRL


def trl() -> None:
    from transformers import AutoTokenizer

    glaive = ff._glaive_messages()
    for tokenizer, folder in ff.TOKENIZERS.items():
        tok = AutoTokenizer.from_pretrained(str(folder))
        facts = {"raises": 0, "over max_length 1024": 0, "tool call names absent": 0, "tools change nothing": 0,
                 "tool turns absent": 0}
        for row in glaive:
            tools = row.get("tools")
            try:
                text = tok.apply_chat_template(row["messages"], tools=tools, tokenize=False)
                ids = tok.apply_chat_template(row["messages"], tools=tools, tokenize=True, return_dict=True)["input_ids"]
            except Exception:  # noqa: BLE001 - SFTTrainer stops on it
                facts["raises"] += 1
                continue
            facts["over max_length 1024"] += len(ids) > 1024  # SFT on messages trains every token (keep_start cut)
            names = [c["function"]["name"] for m in row["messages"] for c in m.get("tool_calls") or []]
            facts["tool call names absent"] += bool(names) and not all(n in text for n in names)
            facts["tools change nothing"] += bool(tools) and text == tok.apply_chat_template(row["messages"], tokenize=False)
            turns = [m["content"] for m in row["messages"] if m["role"] == "tool"]
            facts["tool turns absent"] += bool(turns) and not all(t[:40] in text for t in turns)
        eot = _turn_end(tok)
        facts["setup"] = {"eos": tok.eos_token, "turn end": eot, "generation_config.json": (folder / "generation_config.json").is_file()}
        print(f"trl/glaive_as_messages        {tokenizer:13} {json.dumps(facts)}", flush=True)
        print(f"trl/alpaca_as_prompt_completion {tokenizer:13} {json.dumps(_trl_text(tok, ff._alpaca_prompt_completion()))}",
              flush=True)
        for case, rows, task in (("trl/dpo_as_implicit_pairs", ff._implicit_pairs(), "dpo"),
                                 ("trl/dpo_as_explicit_prompt", ff._explicit_pairs(), "dpo"),
                                 ("trl/v1_dpo_as_implicit_pairs", ff._v1_pairs(), "dpo"),
                                 ("trl/kto_as_prompt_completion", ff._kto_rows(), "kto")):
            print(f"{case:29} {tokenizer:13} {json.dumps(_trl_preference(tok, rows, task))}", flush=True)


def _trl_text(tok, rows: list[dict]) -> dict:
    """SFTTrainer on plain prompt/completion rows: the tokenizer alone (no chat template), EOS appended to the
    completion, the completion trained; what it trains past max_length 1024 is cut."""
    from trl.data_utils import _tokenize

    facts = {"start with BOS": 0, "over max_length 1024": 0, "end with EOS": 0}
    for row in rows:
        ids = _tokenize(tok, row["prompt"] + row["completion"] + tok.eos_token)["input_ids"]
        facts["start with BOS"] += bool(ids) and ids[0] == tok.bos_token_id
        facts["over max_length 1024"] += len(ids) > 1024
        facts["end with EOS"] += ids[-1] == tok.eos_token_id
    return facts


def _turn_end(tok) -> str | None:
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Ok."}],
                                   tokenize=False)
    tail = tok.encode(text[text.rfind("Ok.") + 3:], add_special_tokens=False)
    specials = set(_specials(tok).values())
    return next((tok.convert_ids_to_tokens(i) for i in tail if i in specials), None)


def _trl_preference(tok, rows: list[dict], task: str) -> dict:
    """TRL 1.16's DPO/KTO preparation of the rows: extract_prompt, _tokenize, common_prefix_length, the filter on
    len(prompt_ids) < max_length (keep_start) and the collator's cut at max_length."""
    from trl.data_utils import _tokenize, common_prefix_length, extract_prompt
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    collate = DataCollatorForPreference(pad_token_id=tok.pad_token_id or 0, max_length=1024)
    sides = ("chosen", "rejected") if task == "dpo" else ("completion",)
    facts = {"dropped": 0, "prompt not a prefix": 0, "one side cut much more": 0,
             "special token of reply text tokenized as it": 0}
    specials = _specials(tok)
    for row in rows:
        if task == "dpo" and "prompt" not in row:  # implicit prompt: DPOTrainer extracts it
            row = extract_prompt(row)
        prompt_ids = _tokenize(tok, row["prompt"], add_generation_prompt=True)["input_ids"]
        full = {s: _tokenize(tok, row["prompt"] + row[s])["input_ids"] for s in sides}
        start = min(common_prefix_length(prompt_ids, ids) for ids in full.values())
        facts["prompt not a prefix"] += start < len(prompt_ids)
        kept_prompt = prompt_ids[:start]
        reply_ids = {s: ids[start:] for s, ids in full.items()}
        texts = {s: "".join(m["content"] for m in row[s]) for s in sides}
        facts["special token of reply text tokenized as it"] += any(
            text in texts[s] and ident in reply_ids[s] for s in sides for text, ident in specials.items())
        if len(kept_prompt) >= 1024:
            facts["dropped"] += 1
            continue
        if task == "dpo":
            batch = collate([{"prompt_ids": kept_prompt, "chosen_ids": reply_ids["chosen"],
                              "rejected_ids": reply_ids["rejected"]}])
            kept = [int(batch["completion_mask"][i].sum()) for i in (0, 1)]
            share = [1 - k / len(reply_ids[s]) if reply_ids[s] else 0.0 for k, s in zip(kept, sides)]
            facts["one side cut much more"] += abs(share[0] - share[1]) >= 0.5
    return facts


# ------------------------------------------------------------------------------------------------------- axolotl


def axolotl() -> None:
    import axolotl_goldens
    from transformers import AutoTokenizer

    chat_template, default = axolotl_goldens.load_axolotl(Path(os.environ.get("MLDEBUG_VENVS", "/work/venvs")) / "axolotl-whl")
    from axolotl.utils.schemas.datasets import SFTDataset

    row = ff._read(ff.AXOLOTL / "conversation.json")[0]
    for tokenizer, folder in ff.TOKENIZERS.items():
        tok = AutoTokenizer.from_pretrained(str(folder))
        entry = SFTDataset(path="conversation.json", type="chat_template", field_messages="conversations",
                           message_property_mappings={"role": "from", "content": "value"}).model_dump(exclude_none=True)
        strategy = chat_template.load(tok, default({"sequence_len": 100_000, "train_on_inputs": False}), default(entry))
        result = strategy.tokenize_prompt(json.loads(json.dumps(row)))
        eot = _turn_end(tok)
        eot_id = tok.convert_tokens_to_ids(eot) if eot else None
        pairs = list(zip(result["input_ids"], result["labels"]))
        facts = {"tokens": len(pairs), "trained": sum(1 for _, label in pairs if label != IGNORE), "turn end": eot,
                 "turn ends": sum(1 for i, _ in pairs if i == eot_id),
                 "turn ends trained": sum(1 for i, label in pairs if i == eot_id and label != IGNORE),
                 "eos": tok.eos_token, "generation_config.json": (folder / "generation_config.json").is_file()}
        print(f"axolotl/conversation          {tokenizer:13} {json.dumps(facts)}", flush=True)


if __name__ == "__main__":
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    {"lf": lf, "trl": trl, "axolotl": axolotl}[sys.argv[1]]()
