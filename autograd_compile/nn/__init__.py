"""Neural-network building blocks: Module, Parameter, Linear, Sequential, activations.

>>> import autograd_compile as acg
>>> model = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, 1))
>>> len(list(model.parameters()))
4
"""
from . import functional
from .modules import (GELU, Dropout, Identity, LayerNorm, Linear, Module, Parameter, ReLU,
                      Sequential, Tanh)

__all__ = ["functional", "GELU", "Dropout", "Identity", "LayerNorm", "Linear", "Module",
           "Parameter", "ReLU", "Sequential", "Tanh"]
