"""What it finds
Assistant-only loss is requested but the chat template has no `{% generation %}` markers; the message
says which fallback masking mldebug used (per-turn prefix renders).

Why it matters for training
transformers' `return_assistant_tokens_mask` returns all zeros for such templates (with only a
logged warning). TRL's `assistant_only_loss=True` swaps in its own `{% generation %}` training template
when the tokenizer's template is one TRL ships (Qwen2.5, Qwen3, Llama 3, Phi-3 and others, matched
character for character), and raises `ValueError` for any other template; mldebug renders with the same
training template, read from the installed trl package, and says which. Other trainers fall back to
their own turn finders, whose masks can differ from what you expect.

With TRL, `assistant_only_loss` on plain-text rows is an error too: SFTTrainer raises before training.

Example
Every published Qwen2.5, Qwen3 and Phi-3 template: none has generation markers. With `--framework trl
--train-on assistant`, Qwen2.5's template becomes TRL's `qwen2_5_training.jinja` (info); a Mistral template
TRL does not ship is an error (TRL raises); without trl installed, a warning that TRL's mask may differ.

Fix
Use a training variant of the template with `{% generation %}` around each assistant reply (TRL ships
some in `trl/chat_templates/`), or pass it with `--chat-template`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Severity

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "info"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    plain = setup.row_format == "text" or setup.text_rows  # text rows, or prompt/completion rows of plain strings
    if setup.facts.assistant_mask_needs_chat and setup.train_on == "assistant" and plain:
        yield Hit(
            "assistant_only_loss is set but the rows are plain text, not conversations: SFTTrainer raises ValueError"
            " (\"You set `assistant_only_loss=True`, but the dataset is not conversational\") before training",
            "give messages rows, or drop assistant_only_loss (text rows train on every token)",
            setup.location(),
            Severity.ERROR,
        )
        return
    if not setup.chat or setup.train_on not in ("assistant", "last") or setup.facts.own_templates:
        return  # a framework's own templates (LLaMA-Factory) mask by their slots, not the chat template
    if setup.training_template is not None and setup.training_template.outcome != "own":
        yield from _trl(setup)
        return
    if setup.has_generation_markers:
        return
    own = setup.facts.unmarked_masking
    if own is not None:  # the framework masks without markers its own way
        yield Hit(own[0], own[1], setup.location())
        return
    yield Hit(
        "the chat template has no {% generation %} markers; assistant turns were masked by per-turn prefix renders",
        "a template with {% generation %} markers makes the mask explicit",
        setup.location(),
    )


def _trl(setup) -> Iterator[Hit]:
    """TRL swaps in its training template, raises, or (trl not installed) mldebug cannot tell which."""
    chosen = setup.training_template
    if chosen.outcome == "swapped":
        yield Hit(
            f"the tokenizer's chat template is TRL's {chosen.matched}, which has no {{% generation %}} markers: TRL"
            f" {chosen.trl_version} renders every row with its {chosen.name} instead, and so did mldebug",
            "nothing to do; the ids shown are rendered with TRL's training template",
            setup.location(),
        )
    elif chosen.outcome == "refused":
        yield Hit(
            f"the chat template has no {{% generation %}} markers and is none of the templates TRL {chosen.trl_version}"
            " ships a training variant for: SFTTrainer raises ValueError with assistant_only_loss=True;"
            " mldebug masked by per-turn prefix renders instead",
            "pass a training template with {% generation %} markers via --chat-template (and to TRL)",
            setup.location(),
            Severity.ERROR,
        )
    else:  # trl is not installed
        yield Hit(
            "the chat template has no {% generation %} markers and trl is not installed, so mldebug cannot tell"
            " whether TRL swaps in one of its training templates (it does for the templates it ships) or raises;"
            " mldebug masked by per-turn prefix renders instead, and TRL's ids and labels may differ",
            "pip install trl (the version you train with) to render with the template TRL would use",
            setup.location(),
            Severity.WARNING,
        )
