"""A framework's own tokenization, one batched call per batch of rows.

A framework whose data code tokenizes piece by piece (LLaMA-Factory every template slot, axolotl's prompters the
prompt and the reply) calls its tokenizer once per piece. The same ids come out of one batched call: a fast
tokenizer encodes each text of a batch exactly as it encodes it alone. ``BatchTokenizer`` stands where the
framework's code calls the tokenizer: a first pass over the batch's rows records the texts (and settings) they ask
for, answered with no tokens; one call per setting tokenizes them all; the second pass, the real one, reads the
answers. A text the first pass did not see is tokenized on its own, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_NOTHING: dict[str, list[Any]] = {"input_ids": [], "offset_mapping": []}


class BatchTokenizer:
    """``tokenizer`` for a framework's encoding code: its attributes, and ``__call__`` on one text answered from the
    batch's call when the text was recorded (only ``input_ids`` and ``offset_mapping`` are kept)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._recorded: dict[tuple, dict[str, None]] | None = None  # settings -> texts, while recording
        self._answers: dict[tuple, dict[str, Any]] = {}  # (text, settings) -> the encoding's ids and offsets

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # (pickling asks before __init__ has run)
            raise AttributeError(name)
        return getattr(self._tokenizer, name)

    def __call__(self, text: str, **settings: Any) -> Any:
        key = tuple(sorted(settings.items()))
        if self._recorded is not None:
            self._recorded.setdefault(key, {})[text] = None
            return _NOTHING
        found = self._answers.get((text, key))
        return found if found is not None else self._tokenizer(text, **settings)

    def encode_batch(self, items: list[Any], encode: Callable[[Any], Any], walk: Callable[[Any], Any] | None = None
                     ) -> list[Any]:
        """``encode(item)`` for each item, every tokenizer call of theirs made in one batched call per setting.

        A first pass, ``walk(item)`` (default: ``encode``), only learns which texts each item tokenizes (its calls
        see no tokens; what it returns or raises is dropped); the second, ``encode``, is the real one."""
        if len(items) < 2:
            return [encode(item) for item in items]
        self._recorded = {}
        try:
            for item in items:
                try:
                    (walk or encode)(item)
                except Exception:  # noqa: BLE001, S110 - it saw no tokens: the real run below returns or raises on its own
                    pass
            recorded, self._recorded = self._recorded, None
            self._answer(recorded)
            return [encode(item) for item in items]
        finally:
            self._recorded = None
            self._answers = {}

    def _answer(self, recorded: dict[tuple, dict[str, None]]) -> None:
        for key, texts in recorded.items():
            batch = [t for t in texts if isinstance(t, str) and t]
            if not batch:
                continue
            try:
                encoded = self._tokenizer(batch, **dict(key))
            except NotImplementedError:  # a slow tokenizer has no offsets: its callers fall back text by text
                continue
            offsets = encoded.get("offset_mapping")
            for i, text in enumerate(batch):
                self._answers[(text, key)] = {"input_ids": encoded["input_ids"][i],
                                              "offset_mapping": offsets[i] if offsets is not None else None}
