"""The user's own metric and loss terms (``probe --metric FILE:FUNCTION``, ``--loss-term FILE:FUNCTION``).

The file is the user's code: it is imported only when one of those flags names it (never by ``preflight`` or a
probe without the flag). The function is called on each probed batch as ``FUNCTION(outputs, batch)``: ``outputs``
is the model's forward output (``outputs.logits``: [rows, tokens, vocabulary]), ``batch`` a dict of ``input_ids``,
``attention_mask`` and ``labels`` (-100 where the trainer trains nothing; pairs: the chosen rows, then the rejected
ones). It returns a floating-point tensor: a scalar, or one value per row (the probe takes their mean).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError, in_one_line

METRIC_FLAG = "--metric"
LOSS_TERM_FLAG = "--loss-term"
_LAYER = re.compile(r"^(?P<stack>.*?\blayers?|.*?\bh|.*?\bblocks?)\.(?P<index>\d+)\.(?P<part>[^.]+)")
_WRAPPERS = ("base_model.model.", "model.", "transformer.")


@dataclass(frozen=True)
class UserFunction:
    """A function of the user's file, named on the command line as FILE:FUNCTION."""

    flag: str
    spec: str  # FILE:FUNCTION as given
    name: str  # FUNCTION
    function: Callable[[Any, Mapping[str, Any]], Any]


def load_user_function(spec: str, flag: str) -> UserFunction:
    """Import FILE and return its FUNCTION; every failure is a one-line error naming the flag and the file."""
    file, sep, name = spec.rpartition(":")
    if not sep or not file or not name.isidentifier():
        raise UsageError(f"{flag} {spec}: expected FILE:FUNCTION (a Python file and the name of a function in it)",
                         hint=f"e.g. {flag} metrics.py:answer_logprob")
    path = Path(file)
    if not path.is_file():
        raise InputError(f"{flag} {spec}: no such file {file}")
    module_spec = importlib.util.spec_from_file_location(f"mldebug_user_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise InputError(f"{flag} {spec}: {file} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: any error it raises is theirs to see, in one line
        raise InputError(f"{flag} {spec}: importing {file} raised {_one_line(exc)}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise InputError(f"{flag} {spec}: {file} defines no function {name!r}")
    return UserFunction(flag, spec, name, function)


def user_value(user: UserFunction, outputs: Any, inputs: Mapping[str, Any]) -> Any:
    """The function's value on one batch as a scalar tensor (the mean of a per-row result)."""
    import torch

    try:
        value = user.function(outputs, dict(inputs))
    except Exception as exc:  # the user's code
        raise InputError(f"{user.flag} {user.spec}: calling {user.name}(outputs, batch) raised {_one_line(exc)}") from None
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() == 0:
        kind = f"a {value.dtype} tensor" if isinstance(value, torch.Tensor) else type(value).__name__
        raise InputError(f"{user.flag} {user.spec}: {user.name} returned {kind}, not a floating-point tensor",
                         hint="return a scalar (or one value per row) computed from outputs.logits")
    return value.float().mean()


def parameter_group(name: str) -> str:
    """The group a parameter belongs to: a layer's block (``layers.3.mlp``), else its top module (``lm_head``)."""
    for prefix in _WRAPPERS:
        while name.startswith(prefix):
            name = name[len(prefix):]
    layer = _LAYER.match(name)
    if layer:
        return f"{layer['stack'].rsplit('.', 1)[-1]}.{layer['index']}.{layer['part']}"
    return name.split(".", 1)[0]


def _one_line(exc: BaseException) -> str:
    text = in_one_line(exc)
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
