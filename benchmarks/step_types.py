"""The types every step workload module shares: a workload and how acg builds its loss.

Its own module so that ``step_models`` (the registry) and the workload modules it lists
(``step_rnn``) import it, and not each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import autograd_compile as acg

AcgLoss = Callable[..., acg.Tensor]  # loss(*input tensors)
# acg_build() -> (parameters by name, eager loss, make_compiled(acg.compile) -> loss)
AcgBuild = Callable[[], tuple[dict[str, acg.Tensor], AcgLoss, Callable[[Callable], AcgLoss]]]


@dataclass
class StepModel:
    """One whole-step workload; ``inputs`` are passed positionally in dict order."""

    name: str
    sizes: dict[str, int]
    params: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]
    acg_build: AcgBuild
    jax_loss: Callable[[dict[str, Any], dict[str, Any]], Any] | None
    torch_build: Callable[[], tuple[dict[str, Any], Callable[..., Any]]] | None
