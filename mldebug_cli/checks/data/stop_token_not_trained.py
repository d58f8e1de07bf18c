"""What it finds
A trained assistant turn whose end-of-turn token (the token the template closes assistant turns
with: `<|im_end|>`, `<|eot_id|>`, `<|end|>`, `</s>`) is not among its trained labels, either because
the mask leaves it out or because the turn has none.

Why it matters for training
The model learns to write answers but never learns to end them: at inference it runs on until the
length limit, or starts writing the next user turn itself.

Example
A pre-tokenized dataset whose labels mask everything outside the answer text, `<|im_end|>` included;
a `{% generation %}` block that closes before the end-of-turn token; axolotl `train_on_eos: none`;
Phi-3 under axolotl's defaults, which train only the EOS `<|endoftext|>` (after the last turn), never `<|end|>`.

Fix
Train the end-of-turn token with the answer (axolotl: list it in `eot_tokens`, with `train_on_eos` /
`train_on_eot: turn`; generation blocks that include it), and keep it in pre-tokenized labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import trained_runs
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.row_formats import Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.input_ids or not setup.stop_ids:
        return
    stop_name = _stop_name(setup)
    if isinstance(row.sample, Tokens):
        yield from _pretokenized(row, setup, stop_name)
        return
    missing = []
    for turn in row.turns:
        if not turn.trained or turn.end <= turn.start or turn.end > len(row.input_ids) or turn.cut:
            continue  # untrained, empty, or cut by truncation (response-truncated reports that)
        trained = set(row.labels[turn.start:turn.end])
        trained.discard(IGNORE_INDEX)
        if trained and not trained & setup.stop_ids:
            missing.append(turn.message_index)
    if missing:
        present = any(row.input_ids[p] in setup.stop_ids for t in row.turns for p in range(t.start, min(t.end + 3, len(row.input_ids))))
        why = "is present but masked" if present else "is not in the turn at all"
        yield Hit(
            f"the end-of-turn token {stop_name} {why} in trained assistant turn(s) at message {', '.join(map(str, missing))}",
            _hint(setup, stop_name),
            row.location(missing[0]),
        )


def _hint(setup, stop_name: str) -> str:
    if setup.facts.end_of_turn_hint is not None:  # the framework's own setting for the end-of-turn token
        return setup.facts.end_of_turn_hint.format(token=stop_name)
    return "train the end-of-turn token with each answer (include it in the generation block / train_on_eos)"


def _pretokenized(row, setup, stop_name: str) -> Iterator[Hit]:
    ids, labels = row.input_ids, row.labels
    if len(labels) != len(ids):
        return  # labels-misaligned reports this
    for start, end in trained_runs(labels):
        if end == len(ids) and row.truncated:
            continue
        if any(labels[p] in setup.stop_ids for p in range(start, end)):
            continue
        after = ids[end] if end < len(ids) else None
        where = f"tokens {start}-{end - 1}"
        why = f"the {stop_name} right after it is masked" if after in setup.stop_ids else f"no {stop_name} follows it"
        yield Hit(f"trained span {where} has no end-of-turn label: {why}",
                  "keep the end-of-turn/EOS token's label when masking the prompt", row.location())
        return


def _stop_name(setup) -> str:
    return repr(setup.id_to_piece(setup.end_of_turn_id)) if setup.end_of_turn_id is not None else repr(setup.eos_text)
