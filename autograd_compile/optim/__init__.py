"""Optimizers: SGD and Adam, each step one jitted XLA call over every parameter.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.ones(3))
>>> opt = acg.optim.SGD([w], lr=0.5)
>>> (w * w).sum().backward(); opt.step(); w.tolist()
[0.0, 0.0, 0.0]
"""
from .optimizer import SGD, Adam, Optimizer

__all__ = ["SGD", "Adam", "Optimizer"]
