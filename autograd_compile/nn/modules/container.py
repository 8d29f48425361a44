"""PyTorch's path ``torch.nn.modules.container``: the same classes as ``acg.nn``."""
from .._container_legacy import Container  # noqa: F401
from ..containers import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential)

__all__ = ['Container', 'ModuleDict', 'ModuleList', 'ParameterDict', 'ParameterList',
           'Sequential']
