"""Tape autograd: nodes, the engine, custom Functions, grad modes and hooks.

>>> import autograd_compile as acg
>>> x = acg.tensor([2.0], requires_grad=True)
>>> acg.autograd.grad((x * x).sum(), x)
(tensor([4.]),)
"""
from . import graph
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .anomaly import detect_anomaly, set_detect_anomaly
from .node import AccumulateGrad, Node
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["graph", "backward", "grad", "Function", "FunctionCtx", "once_differentiable",
           "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled", "detect_anomaly",
           "set_detect_anomaly", "AccumulateGrad", "Node", "gradcheck", "gradgradcheck"]
from . import functional  # noqa: E402,F401  (funclin: acg.autograd.functional)
