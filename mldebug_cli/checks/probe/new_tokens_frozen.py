"""New tokens frozen: tokens in trained labels whose untrained embedding and output rows cannot change.

What it finds
    Added tokens of the tokenizer (special tokens, tool-call markers, tokens added for the template) that appear
    in the trained labels of the probed rows, whose input or output embedding row looks untrained (its norm
    below ``untrained_norm_ratio``, default 0.2, of the median row's: zero rows, or rows resized from the mean),
    while no trainable parameter can change their output row (LoRA without ``modules_to_save`` or
    ``trainable_token_indices``).

Why it matters for training
    The model is asked to emit a token it has never learned, and the run cannot teach it: the row that scores
    that token stays where it was initialised. The loss on those positions stays high, generation never stops at
    the new end-of-turn token, or tool calls never open.

Example
    ``<tool_call> (id 151657) is in the trained labels of rows 2, 5 and its rows are untrained (norm 0 of the
    median); its embedding and output rows are frozen``.

Fix
    Add the embedding and output layers to ``lora_modules_to_save`` (``modules_to_save``), or list the token ids in
    ``trainable_token_indices``; or fine-tune from a model whose rows for these tokens are trained.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt, rows_text
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "error"
SUBJECT = "probe"
THRESHOLDS = {"untrained_norm_ratio": 0.2}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    for token in subject.tokens:
        if token.learnable or token.norm_ratio >= ctx.limit("untrained_norm_ratio"):
            continue
        yield Hit(
            message=f"{token.piece!r} (id {token.token_id}) is in the trained labels of rows {rows_text(token.rows)} "
                    f"and its rows look untrained (norm {fmt(token.norm_ratio)} of the median row's): {token.how}",
            hint=f"add embed_tokens and lm_head to {subject.key('modules_to_save')} or the id to "
                 f"{subject.key('trainable_token_indices')}",
            location=subject.location("modules_to_save", row=token.rows[0] if token.rows else None),
        )
