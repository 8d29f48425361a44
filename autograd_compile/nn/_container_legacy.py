"""``nn.Container``: PyTorch's deprecated base of module containers (a Module that adds the
modules given as keywords). Subclassing it or making one warns as PyTorch does.

>>> import warnings, autograd_compile as acg
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     c = acg.nn.Container(fc=acg.nn.Linear(2, 2))
>>> list(c._modules)
['fc']
"""
from __future__ import annotations

import warnings
from typing import Any

from .module import Module

_MESSAGE = ("`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.")


class Container(Module):
    """Deprecated: a Module holding the modules given as keyword arguments."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        warnings.warn(_MESSAGE, FutureWarning, stacklevel=2)
        super().__init_subclass__(**kwargs)

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(_MESSAGE, FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
