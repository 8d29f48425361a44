"""Optimizers (``torch.optim``): each ``step()`` is one jitted XLA call over every parameter.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.ones(3))
>>> opt = acg.optim.SGD([w], lr=0.5)
>>> (w * w).sum().backward(); opt.step(); w.tolist()
[0.0, 0.0, 0.0]
"""
from . import lr_scheduler, swa_utils
from .algorithms import SGD, Adadelta, Adagrad, Adam, AdamW, RMSprop
from .algorithms_extra import ASGD, Adafactor, Adamax, Muon, NAdam, RAdam, Rprop, SparseAdam
from .lbfgs import LBFGS
from .optimizer import Optimizer, required

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW",
           "Adamax", "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SparseAdam",
           "lr_scheduler", "required", "swa_utils"]
