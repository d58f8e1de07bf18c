"""What it finds
A side truncated much more than the other side of its pair: with `keep_start` a long chosen reply loses its end
(and its EOS) while the short rejected one is whole; with `keep_end` a sequence loses all of its prompt. TRL 1.16's
DPO and KTO never cut a reply to nothing (`keep_start` drops such rows first, DP005, and `keep_end` keeps the
reply's end); ORPO does: it never cuts the prompt and keeps the row, so a prompt that fills `max_length` leaves a
sequence longer than `max_length` with no completion token. LLaMA-Factory's pairwise processor cuts both replies
to the same length, and cuts the end of the prompt (its assistant header with it) when prompt and reply do not fit
`cutoff_len`.

Why it matters for training
The preference is then learnt between a cut-off reply and a complete one (or between a reply with context and
one without): the model learns that unfinished answers are preferred, or prefers by length, not by quality.

Example
`max_length=48`: chosen keeps 5 of its 62 reply tokens, rejected keeps all 4.

Fix
Raise `max_length`, or shorten the long reply; prefer `keep_start` (the default).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "pair"
GAP = 0.5  # share of a side's completion cut beyond the other side's


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or pair.dropped or not pair.sides:
        return
    emptied = [side for side, seq in pair.sides.items() if seq.completion_tokens and not seq.trained]
    if emptied:
        seq = pair.sides[emptied[0]]
        yield Hit(f"the {' and '.join(emptied)} reply is cut to nothing: the prompt alone has {seq.prompt_tokens} "
                  f"tokens of max_length {setup.max_length}, and the trainer keeps the row with no trained token",
                  "raise max_length or shorten the prompt", pair.location(emptied[0]))
        return
    for side, seq in pair.sides.items():
        if seq.prompt_tokens and setup.truncation_mode == "keep_end" and seq.labels[0] != -100:
            yield Hit(f"the {side} sequence keeps none of its {seq.prompt_tokens} prompt tokens (keep_end)",
                      "use truncation_mode keep_start or raise max_length", pair.location(side))
            return
    seq = next(iter(pair.sides.values()))
    kept = seq.labels.count(-100) if setup.truncation_mode != "keep_end" else seq.prompt_tokens
    if kept < seq.prompt_tokens:  # the end of the prompt is cut (LLaMA-Factory's infer_seqlen)
        yield Hit(f"the prompt keeps {kept} of its {seq.prompt_tokens} tokens: its end, with the assistant's turn "
                  f"header, is cut to fit max_length {setup.max_length}, and the "
                  f"{'replies follow' if len(pair.sides) > 1 else 'reply follows'} the cut prompt",
                  "raise the length limit or shorten the prompt", pair.location())
        return
    if len(pair.sides) != 2:
        return
    share = {side: seq.completion_cut / seq.completion_tokens if seq.completion_tokens else 0.0
             for side, seq in pair.sides.items()}
    (a, cut_a), (b, cut_b) = sorted(share.items(), key=lambda kv: -kv[1])
    if cut_a - cut_b >= GAP:
        seq = pair.sides[a]
        yield Hit(f"the {a} reply keeps {seq.trained} of its {seq.completion_tokens} tokens, the {b} reply "
                  f"{pair.sides[b].trained} of {pair.sides[b].completion_tokens}: one side is cut much more",
                  "raise max_length or shorten the long reply", pair.location(a))
