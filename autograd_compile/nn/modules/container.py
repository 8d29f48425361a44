"""PyTorch's path ``torch.nn.modules.container``: the same classes as ``acg.nn``."""
from ..containers import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential)

__all__ = ['ModuleDict', 'ModuleList', 'ParameterDict', 'ParameterList', 'Sequential']
