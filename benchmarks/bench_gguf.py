"""Benchmark: reading a GGUF's tokenizer metadata with gguf.GGUFReader against mldebug's header walker.

    python benchmarks/bench_gguf.py [--repeat 3] [--keep-built DIR]

Times, for every GGUF under fixtures/ (hostile ones left out) and under ../shared/corpus/gguf when that
folder exists:
  old: gguf.GGUFReader(path) + _vocab_from_reader, the extraction read_gguf_vocab used before the walker
       decoded values itself (the validation walk that preceded it, a few ms, is not counted)
  new: read_gguf_vocab(path), one bounded pass over the metadata
and checks both give the same GGUFVocab. When no GGUF at hand looks like a deployed one (100k+ tokens and
tokenizer.ggml.merges), one is built first with gguf.GGUFWriter from fixtures/tokenizers/qwen2.5-instruct
(tokens, token types, merges, special ids, chat template; no tensors) in a temporary folder.
Each file is read once beforehand so both paths see a warm page cache; the table gives the median wall time
over --repeat runs and the ratio. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gguf

from mldebug_cli.sources.gguf_file import GGUFVocab, _vocab_from_reader, read_gguf_vocab

ROOT = Path(__file__).resolve().parent.parent

QWEN25 = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
CORPUS_GGUF = ROOT.parent / "shared" / "corpus" / "gguf"
DEPLOYED_VOCAB_SIZE = 100_000


def local_ggufs() -> list[Path]:
    fixtures = [p for p in sorted((ROOT / "fixtures").rglob("*.gguf")) if "hostile" not in p.parts]
    corpus = sorted(CORPUS_GGUF.glob("*.gguf")) if CORPUS_GGUF.is_dir() else []
    return fixtures + corpus


def looks_deployed(path: Path) -> bool:
    vocab = read_gguf_vocab(path)
    return len(vocab.tokens) >= DEPLOYED_VOCAB_SIZE and gguf.Keys.Tokenizer.MERGES in vocab.metadata_keys


def build_qwen25_gguf(path: Path) -> Path:
    """A vocab-only GGUF with what convert_hf_to_gguf writes for Qwen2.5's tokenizer (tensors left out)."""
    tokenizer = json.loads((QWEN25 / "tokenizer.json").read_text(encoding="utf-8"))
    config = json.loads((QWEN25 / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokens = {token_id: text for text, token_id in tokenizer["model"]["vocab"].items()}
    types = dict.fromkeys(tokens, gguf.TokenType.NORMAL)
    for added in tokenizer["added_tokens"]:
        tokens[added["id"]] = added["content"]
        types[added["id"]] = gguf.TokenType.CONTROL if added["special"] else gguf.TokenType.USER_DEFINED
    ids = {text: token_id for token_id, text in tokens.items()}
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    size = max(tokens) + 1
    writer = gguf.GGUFWriter(str(path), arch="qwen2")
    writer.add_name("Qwen2.5 Instruct (vocab only)")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list([tokens.get(i, f"[PAD{i}]") for i in range(size)])
    writer.add_token_types([types.get(i, gguf.TokenType.UNUSED) for i in range(size)])
    writer.add_token_merges(merges)
    writer.add_eos_token_id(ids[config["eos_token"]])
    writer.add_pad_token_id(ids[config["pad_token"]])
    writer.add_bos_token_id(ids["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(config["chat_template"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def old_read(path: Path) -> GGUFVocab:
    return _vocab_from_reader(path, gguf.GGUFReader(path, "r"))


def median_seconds(read: Callable[[Path], GGUFVocab], path: Path, repeat: int) -> tuple[float, GGUFVocab]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = read(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep-built", type=Path, help="write the built Qwen2.5 GGUF here instead of a temp folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        paths = local_ggufs()
        if not any(looks_deployed(p) for p in paths):
            folder = args.keep_built or Path(temp)
            folder.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            paths.append(build_qwen25_gguf(folder / "qwen2.5-instruct-vocab.gguf"))
            print(f"built {paths[-1]} in {time.perf_counter() - start:.1f} s (no deployed-size GGUF at hand)",
                  file=sys.stderr)  # fmt: skip
        print(f"{'file':48} {'MiB':>6} {'tokens':>8} {'merges':>7} {'old s':>7} {'new s':>7} {'ratio':>6}  same")
        for path in paths:
            path.read_bytes()  # warm the page cache for both paths alike
            old_s, old = median_seconds(old_read, path, args.repeat)
            new_s, new = median_seconds(read_gguf_vocab, path, args.repeat)
            merges = "yes" if gguf.Keys.Tokenizer.MERGES in new.metadata_keys else "no"
            name = str(path.relative_to(ROOT.parent)) if path.is_relative_to(ROOT.parent) else path.name
            print(f"{name:48} {path.stat().st_size / 2**20:6.1f} {len(new.tokens):8} {merges:>7} "
                  f"{old_s:7.3f} {new_s:7.3f} {old_s / new_s:5.0f}x  {'yes' if old == new else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
