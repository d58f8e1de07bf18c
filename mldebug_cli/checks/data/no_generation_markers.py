"""What it finds
Assistant-only loss is requested but the chat template has no `{% generation %}` markers; the message
says which fallback masking mldebug used (per-turn prefix renders).

Why it matters for training
transformers' `return_assistant_tokens_mask` returns all zeros for such templates (with only a
logged warning), and TRL's `assistant_only_loss=True` refuses to train; other trainers fall back to
their own turn finders, whose masks can differ from what you expect.

Example
Every published Qwen2.5, Qwen3 and Phi-3 template: none has generation markers.

Fix
Use a training variant of the template with `{% generation %}` around each assistant reply (TRL ships
some in `trl/chat_templates/`), or pass it with `--chat-template`.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.core.findings import Hit, Severity

SEVERITY = "info"
SUBJECT = "setup"


def run(setup, ctx) -> Iterator[Hit]:
    if not setup.chat or setup.train_on not in ("assistant", "last") or setup.has_generation_markers:
        return
    if setup.framework == "trl":
        yield Hit(
            "the chat template has no {% generation %} markers: TRL's assistant_only_loss raises on it;"
            " mldebug masked by per-turn prefix renders instead",
            "pass a training template with {% generation %} markers via --chat-template",
            setup.location(),
            Severity.ERROR,
        )
        return
    if setup.axolotl is not None:
        yield Hit(
            "the chat template has no {% generation %} markers (axolotl does not use them either); assistant turns"
            " were masked as axolotl's chat_template masks them: each turn's content, then its EOS/EOT token",
            "axolotl's eot_tokens, roles_to_train and train_on_eos decide the mask",
            setup.location(),
        )
        return
    yield Hit(
        "the chat template has no {% generation %} markers; assistant turns were masked by per-turn prefix renders",
        "a template with {% generation %} markers makes the mask explicit",
        setup.location(),
    )
