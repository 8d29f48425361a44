"""``torch.fx.experimental.proxy_tensor``: see :mod:`autograd_compile.tracing.proxy_tensor`."""
from ...tracing.proxy_tensor import *  # noqa: F401,F403
from ...tracing.proxy_tensor import make_fx  # noqa: F401
