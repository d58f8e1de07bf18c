"""The probe's public Python API on small hand-made graphs whose answers are known in closed form."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from mldebug_cli.probe import api  # noqa: E402


def test_term_gradients_and_their_cosine_on_shared_parameters():
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    frozen = torch.nn.Parameter(torch.tensor([3.0]), requires_grad=False)
    grads = api.term_gradients({"up": (w * torch.tensor([1.0, 0.0])).sum(), "down": -(w * torch.tensor([1.0, 0.0])).sum(),
                                "other": (w * torch.tensor([0.0, 2.0])).sum() + frozen.sum()},
                               [("w", w), ("frozen", frozen)])
    assert grads.names == ["w"]
    assert grads.cosine("up", "down") == pytest.approx(-1.0)
    assert grads.cosine("up", "other") == pytest.approx(0.0)
    assert grads.norms() == {"up": pytest.approx(1.0), "down": pytest.approx(1.0), "other": pytest.approx(2.0)}


def test_a_term_that_reaches_no_parameter_has_no_gradient():
    w = torch.nn.Parameter(torch.ones(2))
    grads = api.term_gradients({"detached": torch.tensor(1.0), "live": w.sum()}, [w])
    assert grads.grads["detached"] == [None]
    assert math.isnan(grads.cosine("detached", "live"))


def test_metric_sensitivity_of_a_saturated_sigmoid():
    beta = 0.1
    margins = torch.tensor([0.0, 10.0, 100.0, -50.0])
    push = api.metric_sensitivity(lambda m: -torch.nn.functional.logsigmoid(beta * m), margins)
    expected = [2 * torch.sigmoid(torch.tensor(-beta * m)).item() for m in margins.tolist()]
    assert push.tolist() == pytest.approx(expected)
    assert push[2] < 1e-3 < push[3]


def test_trace_non_finite_names_the_first_overflowing_module_and_what_came_before():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].bias.zero_()
        model[2].weight.fill_(1e38)
    trace = api.trace_non_finite(model, lambda: model(torch.full((1, 4), 10.0)).sum())
    assert trace.first == ("2", "forward", "inf")
    assert trace.before() == [("0", 40.0), ("1", 40.0)]


def test_trace_non_finite_is_quiet_on_finite_values():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    trace = api.trace_non_finite(model, lambda: model(torch.ones(1, 2)).sum())
    assert trace.first is None and trace.before() == [] and [n for n, _ in trace.backward] == ["0"]


def test_term_gradients_pass_through_reentrant_checkpointing_and_leave_grad_alone():
    """autograd.grad returns None through a reentrant checkpoint; the trainers' backward() does not (issue 33)."""
    from torch.utils.checkpoint import checkpoint

    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    w.grad = torch.tensor([5.0, 5.0])
    x = torch.tensor([3.0, 4.0], requires_grad=True)  # enable_input_require_grads' doing
    first = checkpoint(lambda t: (w * t).sum(), x, use_reentrant=True)
    second = checkpoint(lambda t: (w * w * t).sum(), x, use_reentrant=True)
    grads = api.term_gradients({"first": first, "second": second}, [("w", w)])
    assert grads.grads["first"][0].tolist() == [3.0, 4.0]
    assert grads.grads["second"][0].tolist() == [6.0, 16.0]
    assert w.grad.tolist() == [5.0, 5.0]


def test_together_the_total_is_the_one_pass_gradient_a_trainer_takes_under_bf16_autocast():
    """Under autocast each backward rounds its own bf16 output gradients, so the sum of two terms' gradients is not
    the gradient of their sum (ORPO's NLL + odds ratio in bf16 differed in the 4th digit, issue 33); ``together``
    takes the latter from one more backward pass, and the terms stay separate."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64))
    x = torch.randn(32, 64)

    def losses():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x).float()
        return {"first": out.logsumexp(-1).mean(), "second": 0.3 * (out[:, :7] ** 2).mean()}

    trainer = losses()
    model.zero_grad()
    (trainer["first"] + trainer["second"]).backward()
    one_pass = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    grads = api.term_gradients(losses(), model.named_parameters(), together=True)
    assert all(torch.equal(a, b) for a, b in zip(grads.total(), one_pass))
    summed = api.TermGradients(grads.names, grads.grads).total()
    assert not all(torch.equal(a, b) for a, b in zip(summed, one_pass))  # what probe reported before
    assert all(p.grad is None for p in model.parameters())  # the parameters' own .grad left as they were
    twice = api.TermGradients(grads.names, {}, None)
    twice.add(grads)
    twice.add(grads)
    assert all(torch.equal(a, 2 * b) for a, b in zip(twice.total(), one_pass))
