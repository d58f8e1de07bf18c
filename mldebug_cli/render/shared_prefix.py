"""Tokenize texts that extend a common prefix without tokenizing the prefix again, with the same ids.

A fast tokenizer first splits the text on its added tokens and tokenizes each piece between them on its own
(normalizer and pre-tokenizer included). So when a text extends a prefix up to the end of an added token, its ids
are the prefix's ids up to that token followed by the ids of the rest, provided that the split cannot move:
the token strips no whitespace after it, matches anywhere (not single-word), is matched on the raw text, and no
longer added token starts with it; and that no piece is tokenized differently for being first (a Metaspace
pre-tokenizer or a Prepend normalizer, a ByteLevel prefix space). Tokenizers that do not meet this get None from
``boundary_pattern`` and are tokenized whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

_POSITIONAL = ("Metaspace", "Prepend", '"add_prefix_space": true')


def boundary_pattern(tokenizer: Any) -> re.Pattern | None:
    """The added tokens a text may be cut after, as one pattern; None when cutting could change the ids."""
    backend = tokenizer.backend_tokenizer
    parts = [backend.normalizer, backend.pre_tokenizer]
    state = json.dumps([json.loads(p.__getstate__()) if p is not None else None for p in parts])
    if any(marker in state for marker in _POSITIONAL):
        return None
    added = sorted(backend.get_added_tokens_decoder().values(), key=lambda a: a.content)
    safe = [a.content for i, a in enumerate(added)
            if a.content and not (a.rstrip or a.single_word or a.normalized)
            and not (i + 1 < len(added) and added[i + 1].content.startswith(a.content))]
    return re.compile("|".join(map(re.escape, sorted(safe, key=len, reverse=True)))) if safe else None


def last_boundary(text: str, pattern: re.Pattern) -> tuple[int, int] | None:
    """The character span of the last boundary token in text (None when there is none)."""
    span = None
    for match in pattern.finditer(text):
        span = match.span()
    return span
