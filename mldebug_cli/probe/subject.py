"""What a probe measured: plain numbers the GP checks read (no torch here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mldebug_cli.core.findings import Location


@dataclass(frozen=True)
class TermMeasure:
    """One loss term: its coefficient, its gradient norm on the trainable parameters and, per row or pair, how
    strongly it still pushes its metric (|d loss/d metric| relative to the same at the metric's neutral point)."""

    name: str
    weight: float
    metric: str  # what the term pushes: "margin", "log odds", "label probability" ...
    rows: tuple[int, ...]  # dataset row of each value below
    push: tuple[float, ...]  # relative |d(term)/d(metric)| per row: 1 = as at the start, ~0 = saturated
    metric_values: tuple[float, ...]
    grad_norm: float  # of weight * term, over all trainable parameters
    key: str | None = None  # the config key that sets the term or its coefficient
    row_names: tuple[str, ...] = ()  # what each row is, where a row number says too little (GRPO: the prompt)
    losses: tuple[float, ...] = ()  # the term's value on each batch, before its coefficient
    idle: str | None = None  # why the term's gradient is zero by design here (GRPO's KL while policy = reference)
    source: str | None = None  # FILE:FUNCTION of a user's own term (--loss-term); None: the trainer's


@dataclass(frozen=True)
class TensorGrad:
    name: str
    numel: int
    grad_norm: float | None  # None: no gradient reached it
    exempt: str | None = None  # why an exact zero is by design (LoRA A on step 1)


@dataclass(frozen=True)
class TermCosine:
    first: str
    second: str
    cosine: float
    first_norm: float
    second_norm: float


@dataclass(frozen=True)
class TokenRows:
    """A token used in trained labels that the base model may never have learned (an added/special token)."""

    token_id: int
    piece: str
    rows: tuple[int, ...]
    norm_ratio: float  # its embedding/output row norm over the median row's (untrained rows: ~0)
    learnable: bool  # some trainable parameter can change its output row
    how: str  # "lm_head in modules_to_save", "trainable_token_indices", "frozen: LoRA on q_proj, v_proj" ...
    output_grad_norm: float | None = None


@dataclass(frozen=True)
class OptimizerState:
    path: str
    step: int | None
    cosine: float  # Adam exp_avg against the current gradient, over all matched parameters
    against_share: float  # share of tensors (by element count) whose exp_avg points against the gradient
    step_ratio: float  # median over tensors of RMS(g / (sqrt(v_hat) + eps)): ~1 fresh, << 1 a damped step
    tensors: int


@dataclass(frozen=True)
class UpdateRatio:
    optimizer: str
    learning_rate: float
    median: float
    smallest: tuple[tuple[str, float], ...]
    largest: tuple[tuple[str, float], ...]
    tensors: int


@dataclass(frozen=True)
class NonFinite:
    module: str
    phase: str  # "forward" or "backward"
    dtype: str
    value: str  # "inf" / "nan"
    before: tuple[tuple[str, float], ...]  # the largest |values| of the modules that ran before it


@dataclass(frozen=True)
class Ablation:
    term: str
    steps: int
    metric: str
    start: float
    with_term: float
    without_term: float


@dataclass(frozen=True)
class GroupGradient:
    """d(metric)/d(param) over one parameter group: its norm (None: no gradient reaches the group)."""

    group: str  # "layers.0.self_attn", "embed_tokens", "lm_head" ...
    tensors: int
    grad_norm: float | None


@dataclass(frozen=True)
class MetricMeasure:
    """The user's own metric (--metric FILE:FUNCTION): its value and how much each parameter group can move it."""

    source: str  # FILE:FUNCTION
    value: float  # its mean over the probed batches
    grad_norm: float | None  # over all trainable tensors; None: nothing trainable reaches it
    groups: tuple[GroupGradient, ...]
    tensors: int
    finite: bool = True


@dataclass(frozen=True)
class GradientPath:
    """How the model was built, for the reasons behind missing gradients."""

    peft: str | None  # "LoRA r=8 on q_proj, v_proj" ...
    checkpointing: bool
    reentrant: bool
    input_grads: bool  # enable_input_require_grads in effect
    input_grads_by: str  # who turns it on (or why nobody does) at the target versions
    error: str | None = None  # backward failed: nothing required grad


@dataclass(frozen=True)
class ProbeSubject:
    config: str
    task: str
    terms: tuple[TermMeasure, ...]
    tensors: tuple[TensorGrad, ...]
    path: GradientPath
    cosines: tuple[TermCosine, ...] = ()
    tokens: tuple[TokenRows, ...] = ()
    optimizer: OptimizerState | None = None
    update: UpdateRatio | None = None
    non_finite: NonFinite | None = None
    ablation: Ablation | None = None
    metric: MetricMeasure | None = None
    keys: Mapping[str, str] = field(default_factory=dict)  # fact -> config key
    lines: Mapping[str, int] = field(default_factory=dict)  # config key -> line

    def location(self, fact: str | None = None, row: int | None = None) -> Location:
        key = self.keys.get(fact, fact) if fact else None
        return Location(path=self.config, key=key, line=self.lines.get(key) if key else None, row=row)

    def key(self, fact: str) -> str:
        key = self.keys.get(fact, fact)
        line = self.lines.get(key)
        return f"`{key}`" + (f" (line {line})" if line else "")
