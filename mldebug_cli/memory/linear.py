"""A linear layer's shape: what parameter counts and LoRA adapters are computed from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Linear:
    name: str  # q_proj, k_proj, ...
    fan_in: int
    fan_out: int
    bias: bool = False

    @property
    def parameters(self) -> int:
        return self.fan_in * self.fan_out + (self.fan_out if self.bias else 0)
