"""Loss saturated: the loss term no longer pushes its metric on most rows or pairs.

What it finds
    For each loss term, |d(term)/d(metric)| per row or pair, relative to the same at the metric's starting point
    (margin 0 for DPO's sigmoid/hinge/IPO, log odds 0 for ORPO, 1 - p of the label tokens for NLL, KTO's
    log-ratio margin over its KL estimate at 0). For GRPO's policy term, per prompt: the RMS of its completions'
    advantages relative to the largest prompt's (a group whose rewards are all equal has zero advantage). It
    fires when that push is below ``push_below`` (default 0.05) on at least ``row_share`` (default 0.5) of the
    rows.

Why it matters for training
    The first question of gradient debugging: is d(loss)/d(metric) nonzero? A saturated sigmoid
    (σ(-β·margin) ≈ 0), IPO margins already at 1/2β, a hinge past its margin, SFT rows already predicted with
    p ≈ 1, KTO rows far on either side of the KL estimate (its sigmoid is flat both ways: a row pushed far the
    wrong way is as stuck as a learned one), GRPO prompts whose completions all got the same reward: the loss is
    satisfied or blind, so no parameter moves however long the run goes. The loss, not the model, is the limit.

Example
    ``sigmoid: push below 0.05 on 8 of 8 pairs (median 0.0003, margin 62.1; rows 0, 1, 2, 3, 4 and 3 more)``;
    ``grpo-policy: push below 0.05 on 3 of 4 prompts (median 0, advantage RMS of the group 0; 'What is two plus
    two?' (line 1), ...): the loss no longer moves the metric``.

Fix
    Reconsider the loss: lower ``beta`` (DPO, KTO) or use harder rejected answers; stop training on rows already
    learned; change ``loss_type`` (IPO's target margin, a label-smoothed sigmoid). GRPO: give the reward partial
    credit, raise ``num_generations``, or drop prompts every completion solves (or fails).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt, rows_text
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "warning"
SUBJECT = "probe"
THRESHOLDS = {"push_below": 0.05, "row_share": 0.5}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    for term in subject.terms:
        if not term.push or term.weight == 0:
            continue
        weak = [i for i, push in enumerate(term.push) if push < ctx.limit("push_below")]
        if len(weak) < ctx.limit("row_share") * len(term.push):
            continue
        rows = [term.rows[i] for i in weak]
        named = rows_text([term.row_names[i] for i in weak], 3) if term.row_names else f"rows {rows_text(rows)}"
        median_push = statistics.median(term.push[i] for i in weak)
        median_metric = statistics.median(term.metric_values[i] for i in weak)
        yield Hit(
            message=f"{term.name}: push below {fmt(ctx.limit('push_below'))} on {len(weak)} of {len(term.push)} "
                    f"{'prompts' if term.row_names else 'rows'} (median {fmt(median_push)}, {term.metric} {fmt(median_metric)}; {named}): "
                    "the loss no longer moves the metric",
            hint=_hint(subject, term),
            location=subject.location("num_generations", None) if term.row_names  # the prompts are named above
            else subject.location(term.key or "beta", row=rows[0]),
        )


def _hint(subject, term) -> str:
    if term.name in ("nll", "sft"):
        return "these rows are already learned: drop them or stop earlier"
    if term.name == "grpo-policy":
        return (f"every completion of these prompts got the same reward: give partial credit, raise "
                f"{subject.key('num_generations')}, or drop prompts that are always solved or always failed")
    return f"reconsider the loss: lower {subject.key('beta')}, use harder rejected answers, or change {subject.key('loss_type')}"
