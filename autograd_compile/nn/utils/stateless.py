"""``torch.nn.utils.stateless``: the older home of ``functional_call`` (``acg.func``'s).

>>> import autograd_compile as acg
>>> lin = acg.nn.Linear(2, 1)
>>> params = {"weight": acg.ones(1, 2), "bias": acg.zeros(1)}
>>> acg.nn.utils.stateless.functional_call(lin, params, (acg.ones(3, 2),)).tolist()
[[2.0], [2.0], [2.0]]
"""
from __future__ import annotations

from typing import Any


def functional_call(module: Any, parameters_and_buffers: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced (see ``acg.func.functional_call``)."""
    from ...func import functional_call as call  # (func imports nn: resolved at call time)
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)


__all__ = ["functional_call"]
