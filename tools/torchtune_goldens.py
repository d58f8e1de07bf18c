"""Write fixtures/torchtune-0.6.1/: what torchtune 0.6.1's SFT builders make of generated rows on its Qwen2.5 tokenizer.

Not run in CI (torchtune wants torchao and pins torchdata; it is no dependency of mldebug):
tests/goldens/torchtune.py reads what this wrote and checks that mldebug's emulation
(``inspect-data --framework torchtune``) gives the same input_ids and labels, and refuses the same rows, row for row.

Usage, in a venv that sees the global torch 2.13 CPU build (the imports of torchtune's data path need these only):

    python -m venv --system-site-packages /work/venvs/torchtune
    /work/venvs/torchtune/bin/pip install --no-deps torchtune==0.6.1 torchao==0.10.0 omegaconf==2.4.0 \\
        sentencepiece==0.2.3 tiktoken==0.14.0
    /work/venvs/torchtune/bin/python tools/torchtune_goldens.py

It derives ``vocab.json`` and ``merges.txt`` (what ``qwen2_5_tokenizer`` reads) from the BPE model of
fixtures/tokenizers/qwen2.5-instruct/tokenizer.json (the npm package's copy) in a temporary folder, generates rows
with a seeded generator (system prompts, multi-turn, ipython/tool turns, empty and non-text content, unicode, NFC,
special tokens typed into text, rows longer than max_seq_len, and rows torchtune refuses), hands them to the real
builders (``chat_dataset``, ``instruct_dataset``, ``alpaca_dataset``: their ``load_dataset`` call is given the rows as
Python dicts) and reads ``dataset[i]`` for each: its ``tokens`` and ``labels``, or the exception it raises.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import importlib.metadata
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "torchtune-0.6.1"
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
SEED = 22

# (style, builder, settings: name -> builder arguments) ; max_seq_len goes to the tokenizer
CASES = {
    "openai": ("chat_dataset", {
        "default": {},
        "train_on_input": {"train_on_input": True},
        "max48": {"max_seq_len": 48},
        "max96_train_on_input": {"max_seq_len": 96, "train_on_input": True},
        "system_prompt": {"new_system_prompt": "You are the shop's assistant."},
    }),
    "sharegpt": ("chat_dataset", {
        "default": {},
        "train_on_input": {"train_on_input": True},
        "max40": {"max_seq_len": 40},
        "system_prompt_max80": {"new_system_prompt": "Answer in one line.", "max_seq_len": 80},
    }),
    "instruct": ("instruct_dataset", {
        "default": {},
        "train_on_input": {"train_on_input": True},
        "max24": {"max_seq_len": 24},
        "system_prompt": {"new_system_prompt": "Translate."},
    }),
    "alpaca": ("alpaca_dataset", {
        "default": {},  # train_on_input: True is alpaca_dataset's default
        "prompt_masked": {"train_on_input": False},
        "max64": {"max_seq_len": 64},
    }),
}

WORDS = ("the", "chain", "slips", "when", "I", "shift", "gears", "brake", "pads", "wheel", "tyre", "pressure", "ok",
         "thanks", "Can", "you", "check", "it", "tomorrow?", "42", "3.5", "km/h", "(see", "note)", "—", "naïve", "café",
         "über", "東京", "自行车", "🚲", "👍🏽", "مرحبا", "e\u0301", "A\u030a", "x\u0338", "'s", "'ll", "don't", "\t", "  ",
         "\n", "\n\n", "\r\n", "{braces}", "{0}", "<b>", "</tool_call>", "<tool_call>", "<|im_end|>", "<|im_start|>",
         "<|endoftext|>", "<|fim_pad|>", "<think>", "</think>", "```py\nprint(1)\n```", "1234567", "x" * 40)


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def text(self, long: bool = False) -> str:
        r = self.r
        kind = r.random()
        if kind < 0.06:
            return ""
        if kind < 0.09:
            return r.choice([" ", "\n", " leading space", "trailing space ", "\n\nleading newlines"])
        n = r.randint(60, 160) if long else r.randint(1, 14)
        words = [r.choice(WORDS) for _ in range(n)]
        return "".join(w if i == 0 or w.isspace() or r.random() < 0.15 else " " + w for i, w in enumerate(words))

    # --- openai messages ---

    def openai(self) -> dict:
        r = self.r
        shape = r.random()
        messages: list[dict] = []
        if r.random() < 0.4:
            messages.append({"role": "system", "content": self.text()})
        for turn in range(r.randint(1, 3)):
            messages.append({"role": "user", "content": self.content()})
            messages.append({"role": "assistant", "content": self.content(long=r.random() < 0.15)})
            if r.random() < 0.2 and turn < 2:  # a tool's answers, then the user goes on (an assistant after them is refused)
                for _ in range(r.randint(1, 2)):
                    messages.append({"role": r.choice(["ipython", "ipython", "tool"]), "content": self.text()})
        if r.random() < 0.1:
            messages.append({"role": "user", "content": self.text()})  # a row that ends with the user
        if r.random() < 0.1:
            messages[-1 if messages[-1]["role"] == "assistant" else 0] = {
                "role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                    "name": "lookup", "arguments": {"part": "chain"}}}]}
        if shape < 0.25:
            self.spoil_openai(messages)
        return {"messages": messages}

    def content(self, long: bool = False):
        r = self.r
        if r.random() < 0.15:  # a list of parts: text parts read, any other type dropped
            parts = [{"type": "text", "text": self.text()} for _ in range(r.randint(1, 3))]
            if r.random() < 0.3:
                parts.insert(r.randrange(len(parts) + 1), {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}})
            return parts
        return self.text(long)

    def spoil_openai(self, messages: list[dict]) -> None:
        r = self.r
        i = r.randrange(len(messages))
        how = r.randrange(11)
        if how == 0:
            messages.insert(0, {"role": "assistant", "content": "first"})
        elif how == 1:
            messages.insert(i, {"role": "user", "content": "twice"}) if messages[i]["role"] == "user" else \
                messages.insert(1, {"role": "user", "content": "twice"})
            messages.insert(1, {"role": "user", "content": "again"})
            messages.insert(1, {"role": "user", "content": "again"})
        elif how == 2:
            messages.append({"role": "system", "content": "late system"})
        elif how == 3:
            del messages[1:]
        elif how == 4:
            messages[i]["content"] = None  # takes the previous message's content (or fails on the first)
        elif how == 5:
            del messages[i]["content"]
        elif how == 6:
            messages[i]["role"] = r.choice(["developer", "function", "bot"])
        elif how == 7:
            messages[i]["content"] = [{"type": "text", "text": 7}]
        elif how == 8:
            messages[i]["content"] = [{"type": "text"}]
        elif how == 9:
            messages[i]["content"] = 12
        else:
            del messages[i]["role"]

    # --- sharegpt conversations ---

    def sharegpt(self) -> dict:
        r = self.r
        turns: list[dict] = []
        if r.random() < 0.4:
            turns.append({"from": "system", "value": self.text()})
        for _ in range(r.randint(1, 3)):
            turns.append({"from": "human", "value": self.text()})
            turns.append({"from": "gpt", "value": self.text(long=r.random() < 0.15)})
        row: dict = {"conversations": turns}
        if r.random() < 0.15:
            row["system"] = "a system column torchtune does not read"
        if r.random() < 0.3:
            i = r.randrange(len(turns))
            how = r.randrange(7)
            if how == 0:
                turns[i]["from"] = r.choice(["user", "assistant", "function_call", "observation", "tool"])
            elif how == 1:
                turns[i]["value"] = None
            elif how == 2:
                del turns[i]["value"]
            elif how == 3:
                turns.insert(0, {"from": "gpt", "value": "first"})
            elif how == 4:
                turns.append({"from": "system", "value": "late"})
            elif how == 5:
                turns[i]["value"] = 3
            else:
                del turns[1:]
        return row

    # --- instruct (input/output) and alpaca (instruction/input/output) ---

    def instruct(self) -> dict:
        r = self.r
        row = {"input": self.text(long=r.random() < 0.15), "output": self.text(long=r.random() < 0.1)}
        if r.random() < 0.15:
            how = r.randrange(4)
            if how == 0:
                del row["input"]
            elif how == 1:
                del row["output"]
            elif how == 2:
                row["output"] = 5
            else:
                row["input"] = None
        return row

    def alpaca(self) -> dict:
        r = self.r
        row: dict = {"instruction": self.text(), "output": self.text(long=r.random() < 0.15)}
        choice = r.random()
        if choice < 0.4:
            row["input"] = self.text(long=r.random() < 0.1)
        elif choice < 0.55:
            row["input"] = ""
        elif choice < 0.6:
            row["input"] = None
        if r.random() < 0.15:
            how = r.randrange(5)
            if how == 0:
                del row["instruction"]
            elif how == 1:
                del row["output"]
            elif how == 2:
                row["output"] = None
            elif how == 3:
                row["instruction"] = 17
            else:
                row["output"] = 5
        return row


U, A = "user", "assistant"
FIXED = {  # shapes the generator may miss, written out
    "openai": [
        {"messages": [{"role": U, "content": "hi"}, {"role": A, "content": None}]},  # the previous message's content
        {"messages": [{"role": U, "content": None}, {"role": A, "content": "x"}]},  # UnboundLocalError
        {"messages": [{"role": U, "content": "a"}, {"role": U, "content": "b"}, {"role": A, "content": "c"}]},
        {"messages": [{"role": U, "content": "only one"}]},
        {"messages": [{"role": U, "content": "q"}, {"role": A, "content": "r"}, {"role": "system", "content": "s"}]},
        {"messages": [{"role": U, "content": "q"}, {"role": A, "content": "call"}, {"role": "ipython", "content": "1"},
                      {"role": "ipython", "content": "2"}]},  # tool answers last: no assistant after them
        {"messages": [{"role": U, "content": "q"}, {"role": A, "content": "r"}, {"role": "ipython", "content": "o"},
                      {"role": A, "content": "after the tool"}]},  # refused: an assistant must follow a user
        {"messages": [{"role": "system", "content": "s"}, {"role": A, "content": "r"}]},
        {"messages": [{"role": U, "content": [{"type": "image_url", "image_url": {"url": "/nonexistent/x.png"}}]},
                      {"role": A, "content": "r"}]},
        {"messages": [{"role": U, "content": "\u00e9 e\u0301 \u212b A\u030a"}, {"role": A, "content": "\ufb01 \u2126"}]},
        {"messages": [{"role": U, "content": "<|im_end|><|im_start|>assistant\n"}, {"role": A, "content": "<tool_call>"}]},
        {"conversations": [{"role": U, "content": "q"}, {"role": A, "content": "r"}]},  # not its column: KeyError
        {"messages": [{"role": 3, "content": "q"}, {"role": A, "content": "r"}]},
        {"messages": "not a list"},
    ],
    "sharegpt": [
        {"conversations": [{"from": "human", "value": "q"}]},
        {"conversations": [{"from": "human", "value": "a"}, {"from": "human", "value": "b"}, {"from": "gpt", "value": "c"}]},
        {"conversations": [{"value": "q"}, {"from": "gpt", "value": "r"}]},
        {"conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": ""}]},
        {"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"}, {"from": "gpt", "value": "r"}],
         "system": "ignored"},
        {"messages": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "r"}]},
    ],
    "instruct": [
        {"input": "", "output": ""},
        {"input": None, "output": "x"},
        {"instruction": "ignored", "input": "q", "output": "r"},
        {"input": "q"},
    ],
    "alpaca": [
        {"instruction": "{input}", "input": "{instruction}", "output": "r"},
        {"instruction": "", "output": ""},
        {"instruction": "q", "input": 0, "output": "r"},
        {"instruction": ["a", "b"], "output": "r"},
        {"instruction": "q", "output": ["a"]},
    ],
}

ROWS_PER_STYLE = {"openai": 70, "sharegpt": 50, "instruct": 40, "alpaca": 45}


def bpe_files(tokenizer_json: Path, folder: Path) -> tuple[str, str]:
    """vocab.json and merges.txt, as Hugging Face's Qwen2 repositories ship them, from tokenizer.json's BPE model."""
    model = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]
    vocab, merges = folder / "vocab.json", folder / "merges.txt"
    vocab.write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    lines = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    merges.write_text("#version: 0.2\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return str(vocab), str(merges)


def run(style: str, builder_name: str, arguments: dict, rows: list[dict], vocab: str, merges: str) -> list[dict]:
    import torchtune.datasets._sft as sft
    from torchtune.datasets import alpaca_dataset, chat_dataset, instruct_dataset
    from torchtune.models.qwen2_5 import qwen2_5_tokenizer

    arguments = dict(arguments)
    tokenizer = qwen2_5_tokenizer(vocab, merges, max_seq_len=arguments.pop("max_seq_len", None))
    handed = [copy.deepcopy(row) for row in rows]
    sft.load_dataset = lambda source, **kwargs: handed  # the rows as Python dicts, in order
    if builder_name == "chat_dataset":
        column = "messages" if style == "openai" else "conversations"
        dataset = chat_dataset(tokenizer, source="json", conversation_column=column, conversation_style=style, **arguments)
    elif builder_name == "instruct_dataset":
        dataset = instruct_dataset(tokenizer, source="json", **arguments)
    else:
        dataset = alpaca_dataset(tokenizer, source="json", **arguments)
    out = []
    for i in range(len(rows)):
        try:
            sample = dataset[i]
        except Exception as exc:  # noqa: BLE001 - what torchtune raises on the row is the golden
            out.append({"error": type(exc).__name__, "message": str(exc)[:200]})
            continue
        out.append({"input_ids": [int(t) for t in sample["tokens"]], "labels": [int(t) for t in sample["labels"]]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    import torchtune

    versions = {name: importlib.metadata.version(name) for name in ("torchtune", "torch", "torchao", "regex")}
    tokenizer_json = TOKENIZER / "tokenizer.json"
    digest = hashlib.sha256(tokenizer_json.read_bytes()).hexdigest()
    args.out.mkdir(parents=True, exist_ok=True)
    gen = Gen(SEED)
    with tempfile.TemporaryDirectory(prefix="torchtune-qwen2_5-") as folder:
        vocab, merges = bpe_files(tokenizer_json, Path(folder))
        for style, (builder, settings) in CASES.items():
            rows = [getattr(gen, style)() for _ in range(ROWS_PER_STYLE[style])] + FIXED[style]
            golden = {
                "torchtune": torchtune.__version__, "versions": versions, "python": sys.version.split()[0],
                "tokenizer": "qwen2.5-instruct", "tokenizer_origin": "npm", "tokenizer_sha256": digest,
                "tokenizer_builder": "torchtune.models.qwen2_5.qwen2_5_tokenizer", "builder": builder, "style": style,
                "seed": SEED, "rows": rows,
                "settings": {name: {"arguments": arguments, "rows": run(style, builder, arguments, rows, vocab, merges)}
                             for name, arguments in settings.items()},
            }
            path = args.out / f"{style}.json.gz"
            data = json.dumps(golden, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            with gzip.GzipFile(path, "wb", mtime=0) as f:  # the same bytes on every run
                f.write(data)
            errors = sum("error" in r for s in golden["settings"].values() for r in s["rows"])
            cases = sum(len(s["rows"]) for s in golden["settings"].values())
            print(f"{path.relative_to(ROOT)}: {len(rows)} rows x {len(settings)} settings = {cases} cases, {errors} refused")


if __name__ == "__main__":
    main()
