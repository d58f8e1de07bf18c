"""What a training row and an eval row share: their texts normalised, an exact key and a MinHash signature.

A row is compared as its prompt and its reply (a conversation: every turn before the last assistant turn, then that
turn; prompt-completion rows: the two columns; text rows: the text; pre-tokenized rows: the ids), each normalised
(Unicode NFKC, case folded, runs of white space made one space). A preference row is compared as its prompt and its
chosen reply (the exact key), its rejected reply joining the words of the near comparison; a KTO row as its prompt and
completion; a GRPO row as its prompt. An image row adds the blake2b digest of each image's bytes (its ``images`` or
``image`` column, then the images inline in its messages) to both: the same text over another image is another row.
Two rows are exact duplicates when both parts are
equal after that; near duplicates when the Jaccard similarity of their word 5-gram sets is at least the check's
threshold. Candidates come from datasketch's MinHash LSH over the eval rows only, so memory grows with the eval set,
not with the training set, which streams past it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.sources.images import ImageProblem, describe, image_bytes
from mldebug_cli.sources.preference_rows import to_trl_row
from mldebug_cli.sources.row_formats import Chat, PromptCompletion, RowProblem, Sample, Text, Tokens, to_sample

SHINGLE_WORDS = 5  # word 5-grams, as Lee et al. 2022 ("Deduplicating Training Data Makes Language Models Better")
NUM_PERM = 128  # MinHash permutations: the estimate's standard error is about 1/sqrt(128), 0.09
LSH_THRESHOLD = 0.6  # candidates: well below the checks' threshold, so a pair at 0.8 is missed with odds < 1 in 10^4
SEED = 1
_PREFERENCE_COLUMNS = ("prompt", "chosen", "rejected", "completion")
EVAL_SIDE = "eval set"  # Location.side of a finding on an eval row (not a row of the dataset shown)


@dataclass(frozen=True)
class RowText:
    """One row's normalised prompt and reply, and where it is."""

    row: int
    prompt: str
    reply: str
    preview: str = ""  # the prompt's last turn (or the reply), as a message names the row
    rejected: str = ""  # a preference row's rejected reply: in the near comparison, not in the exact key
    images: tuple[str, ...] = ()  # an image row's images, each the hex digest of its bytes

    @cached_property
    def key(self) -> bytes:
        whole = "\x00".join((self.prompt, self.reply, *self.images))
        return hashlib.blake2b(whole.encode(), digest_size=8).digest()

    @cached_property
    def shingles(self) -> frozenset[str]:
        words = f"{self.prompt} {self.reply} {self.rejected}".split()
        if len(words) < SHINGLE_WORDS:
            grams = frozenset((" ".join(words),)) if words else frozenset()
        else:
            grams = frozenset(" ".join(words[i:i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))
        return grams | {f"<image {digest}>" for digest in self.images}


@dataclass(frozen=True)
class EvalOverlap:
    """An eval row that the training set holds: the subject of DS053 (exact) and DS054 (near)."""

    eval_path: str
    train_path: str
    eval_row: int
    train_rows: tuple[int, ...]  # the first few training rows that hold it, in row order
    train_count: int  # every training row that holds it
    exact: bool
    similarity: float  # 1.0 for an exact duplicate; the word 5-gram Jaccard similarity of the closest near one
    eval_rows: int  # rows in the eval set
    preview: str  # the eval row's text, shortened

    @property
    def training_rows(self) -> str:
        """The training rows that hold it, as the findings name them: "row 3" or "rows 3, 9 and 12 more"."""
        rows = ", ".join(map(str, self.train_rows))
        more = f" and {self.train_count - len(self.train_rows):,} more" if self.train_count > len(self.train_rows) else ""
        return f"row{'s' if self.train_count > 1 else ''} {rows}{more}"


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def row_text(index: int, data: Any, detection: Any) -> RowText:
    """The row's prompt and reply, normalised; a row no format converts is compared as its canonical JSON."""
    try:
        sample = to_sample(data, detection)
    except (RowProblem, TypeError, ValueError, AttributeError, KeyError):
        return _whole(index, data)
    prompt, reply = _parts(sample)
    last_turn = prompt.rsplit("\n", 1)[-1].split(": ", 1)[-1] if isinstance(sample, Chat) else prompt
    return RowText(index, normalise(prompt), normalise(reply), " ".join((last_turn or reply).split()))


@dataclass(frozen=True)
class RowReader:
    """How a dataset's rows become ``RowText``: SFT rows by their detected format, ``task`` rows (dpo, kto, grpo) by
    TRL's columns, and image rows (``image_base`` set: where their relative image paths start) with their images.
    Picklable: Ray's workers get it with the batch."""

    detection: Any = None
    task: str | None = None
    image_base: str | None = None

    def text(self, index: int, data: Any) -> RowText:
        text = preference_text(index, data, self.task) if self.task is not None else row_text(index, data, self.detection)
        if self.image_base is None:
            return text
        return dataclasses.replace(text, images=image_digests(data, Path(self.image_base)))


def preference_text(index: int, data: Any, task: str) -> RowText:
    """A DPO row's prompt and chosen reply (an implicit prompt: the messages chosen and rejected begin with), its
    rejected reply apart; a KTO row's prompt and completion; a GRPO row's prompt. A row TRL's columns do not fit is
    compared as its canonical JSON."""
    try:
        columns = to_trl_row(data, task)
    except RowProblem:  # image parts in the messages (TRL's vision rows) or a row the task's columns do not fit
        columns = {k: v for k, v in data.items() if k in _PREFERENCE_COLUMNS and isinstance(v, (str, list))} \
            if isinstance(data, dict) else {}
        if not columns:
            return _whole(index, data)
    prompt = columns.get("prompt", "")
    chosen = columns.get("chosen", columns.get("completion", ""))
    rejected = columns.get("rejected", "")
    if "prompt" not in columns and isinstance(chosen, list) and isinstance(rejected, list):
        shared = 0
        while shared < min(len(chosen), len(rejected)) - 1 and chosen[shared] == rejected[shared]:
            shared += 1
        prompt, chosen, rejected = chosen[:shared], chosen[shared:], rejected[shared:]
    prompt_text, reply = (_side_text(prompt), _side_text(chosen))
    last_turn = prompt_text.rsplit("\n", 1)[-1].split(": ", 1)[-1] if isinstance(prompt, list) else prompt_text
    return RowText(index, normalise(prompt_text), normalise(reply), " ".join((last_turn or reply).split()),
                   rejected=normalise(_side_text(rejected)))


def image_digests(data: Any, base: Path) -> tuple[str, ...]:
    """The digests of a row's images: its ``images`` (or ``image``) column, then the images inline in its messages
    (an image that cannot be read is named by how the row gives it, so two rows naming the same missing file match)."""
    if not isinstance(data, dict):
        return ()
    column = data["images"] if "images" in data else [data["image"]] if "image" in data else []
    values = list(column) if isinstance(column, list) else [column]
    messages = [m for key in ("messages", "prompt", "chosen", "rejected", "completion")
                if isinstance(data.get(key), list) for m in data[key]]
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and part.get("type") == "image":
                values += [part[k] for k in ("image", "url", "path", "base64") if k in part]
    return tuple(_digest(value, base) for value in values if value is not None)


def _digest(value: Any, base: Path) -> str:
    try:
        return hashlib.blake2b(image_bytes(value, base), digest_size=8).hexdigest()
    except ImageProblem:
        return f"unreadable {describe(value)}"


def _side_text(side: Any) -> str:
    return side if isinstance(side, str) else _turns(side)


def _whole(index: int, data: Any) -> RowText:
    whole = normalise(json.dumps(data, sort_keys=True, ensure_ascii=False, default=str))
    return RowText(index, "", whole, whole)


def _parts(sample: Sample) -> tuple[str, str]:
    if isinstance(sample, Chat):
        messages = [m for m in sample.messages if isinstance(m, dict)]
        last = max((i for i, m in enumerate(messages) if m.get("role") in ("assistant", "gpt", "model")), default=None)
        if last is None:
            return _turns(messages), ""
        return _turns(messages[:last]), _content(messages[last].get("content"))
    if isinstance(sample, PromptCompletion):
        prompt = sample.prompt if isinstance(sample.prompt, str) else _turns(sample.prompt)
        completion = sample.completion if isinstance(sample.completion, str) else _turns(sample.completion)
        return prompt, completion
    if isinstance(sample, Text):
        return "", sample.text
    assert isinstance(sample, Tokens)
    return "", " ".join(map(str, sample.input_ids))


def _turns(messages: Iterable[Any]) -> str:
    return "\n".join(f"{m.get('role')}: {_content(m.get('content'))}" for m in messages if isinstance(m, dict))


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # typed parts: their text
        return " ".join(str(p.get("text", p.get("value", ""))) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content, sort_keys=True, default=str)


def _minhash():
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        raise UsageError("--eval-dataset's near-duplicate check needs datasketch, which is not installed",
                         hint="pip install 'mldebug[overlap]', or --ignore DS054 to compare exact duplicates only") from None
    return MinHash, MinHashLSH


def signatures(texts: list[RowText]) -> list[Any]:
    """MinHash signatures of the rows' word 5-grams (one set of permutations for all of them)."""
    MinHash, _ = _minhash()
    # crc32 (C, stable across processes: the eval signatures are made here, the training ones on workers) instead of
    # datasketch's default SHA-1, which took most of the time; a weaker hash can only cost recall, never a false
    # flag: every candidate's similarity is computed exactly
    return MinHash.bulk([[s.encode() for s in t.shingles] for t in texts], num_perm=NUM_PERM, seed=SEED,
                        hashfunc=zlib.crc32)


@dataclass
class EvalIndex:
    """The eval rows, held to look training rows up in: exact keys, and (``near``) their 5-gram sets in an LSH."""

    near: bool
    rows: int = 0
    exact: dict[bytes, list[int]] = field(default_factory=dict)
    shingles: dict[int, frozenset[str]] = field(default_factory=dict)
    previews: dict[int, str] = field(default_factory=dict)
    lsh: Any = None

    def add(self, texts: list[RowText]) -> None:
        self.rows += len(texts)
        for text in texts:
            self.exact.setdefault(text.key, []).append(text.row)
            self.previews[text.row] = text.preview
        if not self.near:
            return
        if self.lsh is None:
            _, MinHashLSH = _minhash()
            self.lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
        for text, signature in zip(texts, signatures(texts)):
            if text.shingles:
                self.shingles[text.row] = text.shingles
                self.lsh.insert(text.row, signature, check_duplication=False)

    def matches(self, texts: list[RowText], min_similarity: float) -> Iterator[tuple[int, int, float]]:
        """(eval row, training row, similarity) for each pair at ``min_similarity`` or more; 1.0 when exact."""
        for text in texts:
            for eval_row in self.exact.get(text.key, ()):
                yield eval_row, text.row, 1.0
        if not self.near or self.lsh is None:
            return
        for text, signature in zip(texts, signatures(texts)):
            exact = set(self.exact.get(text.key, ()))
            for eval_row in self.lsh.query(signature):
                if eval_row in exact:
                    continue
                theirs = self.shingles[eval_row]
                similarity = len(text.shingles & theirs) / len(text.shingles | theirs)
                if similarity >= min_similarity:
                    yield eval_row, text.row, similarity
