"""``torch.fx.experimental.symbolic_shapes``: see :mod:`autograd_compile.tracing.symbolic_shapes`."""
from ...tracing.symbolic_shapes import *  # noqa: F401,F403
