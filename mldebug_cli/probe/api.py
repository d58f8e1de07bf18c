"""The probe's measurements as a small Python API for custom training loops (torch imported by the caller).

    from mldebug_cli.probe import api

    grads = api.term_gradients({"nll": nll, "odds_ratio": lam * ratio_loss}, model.named_parameters())
    grads.norms()                      # {"nll": 1.9, "odds_ratio": 0.02}
    grads.cosine("nll", "odds_ratio")  # -0.71: the terms pull the shared parameters apart

    push = api.metric_sensitivity(lambda m: -torch.nn.functional.logsigmoid(0.1 * m), margins)
    # |d loss / d margin| per pair, relative to the same at margin 0: ~0 means the loss no longer pushes

    trace = api.trace_non_finite(model, lambda: model(**batch).logits.float().sum())
    trace.first                        # ("model.layers.1.mlp.down_proj", "forward", "inf") or None
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TermGradients:
    """Each loss term's gradient on the same parameters (None where the term does not reach a parameter)."""

    names: list[str]
    grads: dict[str, list[Any]]  # term -> one tensor (or None) per parameter
    # the gradient of the terms' sum from one backward pass, as the trainer takes it (None: the sum of the terms'):
    # under bf16/fp16 autocast each backward rounds its own output gradients, so the per-term sum is off in the 4th digit
    combined: list[Any] | None = None

    def norms(self) -> dict[str, float]:
        return {term: _norm(grads) for term, grads in self.grads.items()}

    def tensor_norms(self, term: str) -> dict[str, float | None]:
        return {name: None if g is None else float(g.float().norm()) for name, g in zip(self.names, self.grads[term])}

    def cosine(self, first: str, second: str) -> float:
        """Cosine between two terms' gradients over the parameters both reach (nan when either is zero there)."""
        dot = a2 = b2 = 0.0
        for a, b in zip(self.grads[first], self.grads[second]):
            if a is None or b is None:
                continue
            a, b = a.double(), b.double()
            dot += float((a * b).sum())
            a2 += float((a * a).sum())
            b2 += float((b * b).sum())
        return dot / math.sqrt(a2 * b2) if a2 > 0 and b2 > 0 else math.nan

    def total(self) -> list[Any]:
        """The summed gradient per parameter (None where no term reaches it): the one-pass gradient where taken."""
        if self.combined is not None:
            return self.combined
        out: list[Any] = []
        for i in range(len(self.names)):
            parts = [self.grads[t][i] for t in self.grads if self.grads[t][i] is not None]
            out.append(sum(parts[1:], parts[0].clone()) if parts else None)
        return out

    def add(self, other: TermGradients) -> None:
        """Accumulate another batch's gradients (same terms and parameters)."""
        if self.combined is not None or other.combined is not None:  # a batch summed in one pass: keep that sum
            self.combined = _accumulated(self.total() if self.grads else [None] * len(self.names), other.total())
        for term, grads in other.grads.items():
            self.grads[term] = _accumulated(self.grads.setdefault(term, [None] * len(self.names)), grads)


def _accumulated(mine: list[Any], grads: list[Any]) -> list[Any]:
    return [mine[i] if g is None else g.clone() if mine[i] is None else mine[i] + g for i, g in enumerate(grads)]


def term_gradients(losses: Mapping[str, Any], params: Iterable[Any], together: bool = False,
                   combined_loss: Any = None) -> TermGradients:
    """d(term)/d(param) for each term separately (one backward pass each, the graph kept between them); with
    ``together``, also the gradient of their sum from one more backward pass, as a trainer takes it (``combined``).

    ``params`` are ``(name, parameter)`` pairs (``model.named_parameters()``) or bare parameters; frozen ones are
    skipped. ``combined_loss``: the sum as the trainer writes it, for that one more pass (None: the terms added in
    order). A term that does not require grad (nothing trainable reaches it) gets None everywhere. The gradients
    come from ``backward()`` into ``.grad``, as a trainer takes them: ``torch.autograd.grad`` returns None through
    reentrant gradient checkpointing, whose recomputed segment only feeds ``.grad``. The parameters' own ``.grad``
    are left as they were.
    """
    import torch

    named = [(p if isinstance(p, tuple) else (str(i), p)) for i, p in enumerate(params)]
    named = [(n, p) for n, p in named if p.requires_grad]
    tensors = [p for _, p in named]
    kept = [p.grad for p in tensors]
    result: dict[str, list[Any]] = {}
    terms = list(losses.items())
    reaching = [loss for _, loss in terms if isinstance(loss, torch.Tensor) and loss.requires_grad]
    together = together and len(reaching) > 1
    combined = None
    try:
        for index, (term, loss) in enumerate(terms):
            if not (isinstance(loss, torch.Tensor) and loss.requires_grad):
                result[term] = [None] * len(tensors)
                continue
            for p in tensors:
                p.grad = None
            loss.backward(retain_graph=together or index < len(terms) - 1)
            result[term] = [None if p.grad is None else p.grad.detach().clone() for p in tensors]
        if together:
            for p in tensors:
                p.grad = None
            (combined_loss if combined_loss is not None else sum(reaching[1:], reaching[0])).backward()
            combined = [None if p.grad is None else p.grad.detach().clone() for p in tensors]
    finally:
        for p, grad in zip(tensors, kept):
            p.grad = grad
    return TermGradients([n for n, _ in named], result, combined)


def metric_sensitivity(loss_of_metric: Callable[[Any], Any], metric: Any, neutral: float = 0.0) -> Any:
    """|d loss/d metric| per element of ``metric``, divided by the same at ``neutral`` (where training starts).

    ``loss_of_metric`` maps the metric tensor to per-element losses (``lambda m: -logsigmoid(beta * m)``). 1 means
    the loss pushes as hard as at the start; ~0 that it no longer cares (saturated, a dead zone).
    """
    import torch

    def slope(values: Any) -> Any:
        values = values.detach().double().clone().requires_grad_(True)
        with torch.enable_grad():  # callers may measure under no_grad
            (grad,) = torch.autograd.grad(loss_of_metric(values).sum(), values, allow_unused=True)
        return torch.zeros_like(values) if grad is None else grad.abs()

    here = slope(metric)
    start = slope(torch.full_like(metric.detach().double(), neutral))
    return torch.where(start > 0, here / start.clamp_min(1e-300), here)


@dataclass
class NonFiniteTrace:
    """Per module, in the order they ran: the largest |value| of its output (forward) and gradient (backward)."""

    forward: list[tuple[str, float]] = field(default_factory=list)
    backward: list[tuple[str, float]] = field(default_factory=list)
    first: tuple[str, str, str] | None = None  # (module, "forward"/"backward", "inf"/"nan")

    def before(self, limit: int = 3) -> list[tuple[str, float]]:
        """The largest |values| of the modules that ran before the first non-finite one (forward order)."""
        if self.first is None:
            return []
        module, phase, _ = self.first
        order = self.forward if phase == "forward" else self.backward
        names = [n for n, _ in order]
        ran = order[: names.index(module)] if module in names else order
        return sorted(ran, key=lambda item: -item[1])[:limit]


def trace_non_finite(model: Any, run: Callable[[], Any], backward: bool = True) -> NonFiniteTrace:
    """Run ``run()`` (a forward pass returning a scalar) with hooks on every module of ``model``; backpropagate it
    when ``backward``; return where values first stop being finite, and how large they were before."""
    import torch

    trace = NonFiniteTrace()
    handles = []

    def largest(output: Any) -> tuple[float, str | None]:
        tensors = [output] if isinstance(output, torch.Tensor) else [
            t for t in (output if isinstance(output, (tuple, list)) else getattr(output, "values", lambda: [])())
            if isinstance(t, torch.Tensor)]
        peak, bad = 0.0, None
        for t in tensors:
            if not t.is_floating_point() or t.numel() == 0:
                continue
            t = t.detach()
            if bad is None and not bool(torch.isfinite(t).all()):
                bad = "nan" if bool(torch.isnan(t).any()) else "inf"
            finite = t[torch.isfinite(t)]
            if finite.numel():
                peak = max(peak, float(finite.abs().max()))
        return peak, bad

    def on_forward(name: str):
        def hook(module, inputs, output):
            peak, bad = largest(output)
            trace.forward.append((name, peak))
            if bad and trace.first is None:
                trace.first = (name, "forward", bad)
        return hook

    def on_backward(name: str):
        def hook(module, grad_input, grad_output):
            peak, bad = largest(tuple(g for g in grad_output if g is not None))
            trace.backward.append((name, peak))
            if bad and trace.first is None:
                trace.first = (name, "backward", bad)
        return hook

    for name, module in model.named_modules():
        if not name or list(module.children()):
            continue  # leaves only: a container's output is its last leaf's
        handles.append(module.register_forward_hook(on_forward(name)))
        if backward:
            handles.append(module.register_full_backward_hook(on_backward(name)))
    try:
        loss = run()
        if backward and isinstance(loss, torch.Tensor) and loss.requires_grad and trace.first is None:
            loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    return trace


def _norm(grads: list[Any]) -> float:
    total = 0.0
    for g in grads:
        if g is not None:
            total += float(g.double().pow(2).sum())
    return math.sqrt(total)
