"""TRL's SFTTrainer data semantics (checked row for row against TRL 1.16.0, tests/frameworks/test_trl_goldens.py).

- Conversations are rendered with the chat template and tokenized without special tokens; plain text and
  text prompt/completion rows get the EOS text appended (unless they end with it) and are tokenized with them.
- Labels: every token by default; ``completion_only_loss`` (on by default for prompt/completion rows) trains
  from where the tokenized prompt and the tokenized prompt+completion first differ; ``assistant_only_loss``
  trains the template's ``{% generation %}`` spans.
- ``assistant_only_loss`` with a template without ``{% generation %}`` markers: TRL swaps in its own training
  template when the tokenizer's template is one it ships (``trl/chat_templates/X.jinja`` exactly, paired with
  ``X_training.jinja``), and raises ``ValueError`` for any other template.
- ``max_length`` defaults to 1024; rows are cut to their first ``max_length`` tokens, and rows left with no
  trained token are dropped from the dataset.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from importlib import metadata, resources

from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.truncation import Truncated, truncate

NAME = "trl"
DEFAULT_MAX_LENGTH = 1024
TRUNCATION = "keep_start"
_TRAINING_SUFFIX = "_training.jinja"
DESCRIPTION = (f"max_length {DEFAULT_MAX_LENGTH} unless given, keep_start truncation, rows left with no trained"
               " token dropped")


def max_length(given: int | None) -> int:
    """SFTConfig.max_length: what the user gave, else TRL's default."""
    return DEFAULT_MAX_LENGTH if given is None else given


@dataclass(frozen=True)
class TrainingTemplate:
    """What TRL renders with under ``assistant_only_loss``, as decided from the tokenizer's template.

    ``outcome``: "own" (the template has generation markers: TRL uses it), "swapped" (TRL substitutes
    ``name`` from its package), "refused" (TRL raises ValueError), or "unknown" (trl is not installed).
    """

    outcome: str
    text: str | None = None
    name: str | None = None  # the training template's file in trl/chat_templates
    matched: str | None = None  # the shipped template the tokenizer's template equals
    trl_version: str | None = None

    def describe(self) -> str:
        return f"trl {self.trl_version} chat_templates/{self.name} (TRL swaps it in for {self.matched}: assistant_only_loss)"


def training_template(template: str, has_generation_markers: bool) -> TrainingTemplate:
    """The template TRL's SFTTrainer uses with ``assistant_only_loss=True``, picked as TRL picks it.

    TRL compares the tokenizer's template, character for character, with the originals it ships and
    returns the paired ``_training`` variant; the templates are read from the installed trl package.
    """
    if has_generation_markers:
        return TrainingTemplate("own", template)
    if importlib.util.find_spec("trl") is None:
        return TrainingTemplate("unknown")
    version = metadata.version("trl")
    folder = resources.files("trl").joinpath("chat_templates")
    for training in sorted(folder.iterdir(), key=lambda p: p.name):
        if not training.name.endswith(_TRAINING_SUFFIX):
            continue
        original = folder.joinpath(training.name.removesuffix(_TRAINING_SUFFIX) + ".jinja")
        if original.is_file() and original.read_text(encoding="utf-8") == template:
            return TrainingTemplate("swapped", training.read_text(encoding="utf-8"), training.name, original.name, version)
    return TrainingTemplate("refused", trl_version=version)


def truncated(ids: list[int], labels: list[int], max_len: int) -> Truncated:
    """The first ``max_len`` tokens; then TRL filters out the rows that have no trained token left."""
    cut = truncate(ids, labels, max_len, TRUNCATION)
    if any(label != IGNORE_INDEX for label in cut.labels):
        return cut
    return replace(cut, dropped=True, dropped_by="nothing-trained")
