"""Each probe check (GP001-GP011) decides on the readings `mldebug probe` measured (probe.subject), without a model:
it fires on the readings of its planted case and stays quiet on a healthy run's, at its documented thresholds.

The fast tier's sibling of the GP case files (tests/checks/test_probe_case_files.py), whose cases build a tiny model,
train it with TRL first where the case needs a trained checkpoint, and measure these readings from it: those run in
the slow tier but the first case of GP002 (the no-gradient path, the cheapest end-to-end probe)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mldebug_cli.checks.probe.common import ProbeContext
from mldebug_cli.core.registry import load, lookup
from mldebug_cli.probe.subject import (
    Ablation,
    GradientPath,
    GroupGradient,
    MetricMeasure,
    NonFinite,
    OptimizerState,
    ProbeSubject,
    TensorGrad,
    TermCosine,
    TermMeasure,
    TokenRows,
    UpdateRatio,
)

PATH = GradientPath(peft="LoRA r=8 on q_proj, v_proj", checkpointing=False, reentrant=False, input_grads=False,
                    input_grads_by="nobody: no checkpointing")
TENSORS = (TensorGrad("layers.0.self_attn.q_proj.lora_A.default.weight", 512, 0.0, exempt="LoRA A on step 1"),
           TensorGrad("layers.0.self_attn.q_proj.lora_B.default.weight", 512, 0.031))
DPO = TermMeasure(name="sigmoid", weight=1.0, metric="margin", rows=(0, 1, 2, 3), push=(0.9, 0.8, 0.95, 0.7),
                  metric_values=(0.1, 0.3, -0.2, 0.4), grad_norm=0.5, key="beta")
SFT = TermMeasure(name="sft", weight=1.0, metric="label probability", rows=(0, 1, 2, 3), push=(0.9, 0.8, 0.85, 0.9),
                  metric_values=(0.1, 0.2, 0.15, 0.1), grad_norm=0.4, key="rpo_alpha")
HEALTHY = ProbeSubject(config="config.yaml", task="dpo", terms=(DPO, SFT), tensors=TENSORS, path=PATH,
                       keys={"beta": "beta", "learning_rate": "learning_rate"}, lines={"beta": 4, "learning_rate": 7})


def hits(code: str, subject: ProbeSubject) -> list[str]:
    check = load(lookup(code))
    return [f.message for f in check.findings(subject, ProbeContext(limits=dict(check.thresholds)))]


# code -> the readings of its planted case (the healthy run's with one thing changed), and what the message says
PLANTED = {
    "GP001": (replace(HEALTHY, terms=(replace(DPO, push=(0.01, 0.02, 0.9, 0.001), metric_values=(9.1, 8.7, 0.2, 12.0)),
                                      SFT)), ["sigmoid: push below 0.05 on 3 of 4 rows", "rows 0, 1, 3"]),
    "GP002": (replace(HEALTHY, tensors=(*TENSORS, TensorGrad("layers.1.mlp.up_proj.lora_B.default.weight", 512, None))),
              ["1 of 3 trainable tensors get no gradient", "the loss never reaches these modules",
               "1 LoRA A matrices are zero by design"]),
    "GP003": (replace(HEALTHY, tokens=(TokenRows(token_id=151657, piece="<tool_call>", rows=(2, 5), norm_ratio=0.0,
                                                 learnable=False, how="frozen: LoRA on q_proj, v_proj"),)),
              ["'<tool_call>' (id 151657)", "rows 2, 5", "frozen: LoRA on q_proj, v_proj"]),
    "GP004": (replace(HEALTHY, cosines=(TermCosine("sigmoid", "sft", -0.93, 0.5, 0.4),)),
              ["sigmoid and sft: cosine -0.93", "the terms cancel"]),
    "GP005": (replace(HEALTHY, terms=(DPO, replace(SFT, grad_norm=0.5 / 400))),
              ["sigmoid's gradient is 400x sft's", "sft does nothing"]),
    "GP006": (replace(HEALTHY, optimizer=OptimizerState(path="checkpoint-4/optimizer.pt", step=4, cosine=-0.982,
                                                        against_share=1.0, step_ratio=0.6, tensors=8)),
              ["exp_avg points against the current gradient: cosine -0.982", "100% of the elements",
               "checkpoint step 4"]),
    "GP007": (replace(HEALTHY, update=UpdateRatio(optimizer="adamw_torch", learning_rate=1e-10, median=3.2e-9,
                                                  smallest=(("lm_head.weight", 1e-9),), largest=(("norm.weight", 1e-8),),
                                                  tensors=8)),
              ["median update/parameter RMS 3.20e-09 at learning_rate 1.00e-10", "smallest lm_head.weight",
               "nothing moves"]),
    "GP008": (replace(HEALTHY, non_finite=NonFinite(module="layers.1.mlp.down_proj", phase="forward", dtype="fp16",
                                                    value="inf", before=(("layers.1.mlp.up_proj", 6.1e4),))),
              ["layers.1.mlp.down_proj's forward output is inf in fp16", "layers.1.mlp.up_proj 6.10e+04"]),
    "GP009": (replace(HEALTHY, ablation=Ablation(term="sft", steps=2, metric="label probability", start=0.1,
                                                 with_term=0.1204, without_term=0.12)),
              ["sft: label probability moved +0.0204 in 2 steps with the term and +0.02 without"]),
    "GP010": (replace(HEALTHY, metric=MetricMeasure(source="metric.py:accuracy", value=0.25, grad_norm=None,
                                                    groups=(GroupGradient("layers.0.self_attn", 2, None),), tensors=2)),
              ["metric metric.py:accuracy (value 0.25): no gradient reaches all 2 trainable tensors (1 groups)"]),
    "GP011": (replace(HEALTHY, terms=(DPO, SFT, TermMeasure(name="argmax", weight=1.0, metric="accuracy", rows=(0,),
                                                            push=(), metric_values=(), grad_norm=0.0, losses=(0.5,),
                                                            source="terms.py:argmax_term"))),
              ["loss term terms.py:argmax_term (value 0.5): gradient norm 0 on 2 trainable tensors"]),
}


def test_every_probe_check_has_planted_readings():
    from mldebug_cli.core.registry import REGISTRY

    assert sorted(PLANTED) == sorted(ref.code for ref in REGISTRY if ref.code.startswith("GP"))


@pytest.mark.parametrize("code", sorted(PLANTED))
def test_each_probe_check_fires_on_its_planted_readings(code):
    subject, wanted = PLANTED[code]
    messages = hits(code, subject)
    assert len(messages) == 1, messages
    for part in wanted:
        assert part in messages[0], (part, messages[0])


@pytest.mark.parametrize("code", sorted(PLANTED))
def test_each_probe_check_is_quiet_on_a_healthy_run(code):
    assert hits(code, HEALTHY) == []


def test_the_thresholds_are_the_documented_edges():
    """Just inside a threshold is quiet; past it fires (GP005: 100x, GP006: cosine -0.2, GP007: 1e-5 and 0.1)."""
    assert hits("GP005", replace(HEALTHY, terms=(DPO, replace(SFT, grad_norm=0.5 / 100)))) == []
    optimizer = OptimizerState(path="optimizer.pt", step=None, cosine=-0.19, against_share=0.5, step_ratio=0.06,
                               tensors=4)
    assert hits("GP006", replace(HEALTHY, optimizer=optimizer)) == []
    assert len(hits("GP006", replace(HEALTHY, optimizer=replace(optimizer, cosine=-0.21, step_ratio=0.04)))) == 2
    update = UpdateRatio(optimizer="adamw_torch", learning_rate=2e-5, median=1e-3, smallest=(("a", 1e-4),),
                         largest=(("b", 0.2),), tensors=2)
    assert hits("GP007", replace(HEALTHY, update=update)) == []
    assert "each step rewrites the weights" in hits("GP007", replace(HEALTHY, update=replace(update, median=0.2)))[0]


def test_grpos_idle_kl_term_is_not_dominated():
    """GRPO's KL term has no gradient while the policy is the reference (step 0): idle by design, never GP005."""
    policy = TermMeasure(name="grpo-policy", weight=1.0, metric="advantage", rows=(0,), push=(1.0,), metric_values=(1.0,),
                         grad_norm=0.3)
    kl = TermMeasure(name="kl", weight=0.04, metric="kl", rows=(0,), push=(), metric_values=(), grad_norm=0.0,
                     key="beta", idle="the policy is the reference model at step 0")
    subject = replace(HEALTHY, task="grpo", terms=(policy, kl))
    assert hits("GP005", subject) == []
    assert hits("GP005", replace(subject, terms=(policy, replace(kl, idle=None, grad_norm=1e-6)))) != []
