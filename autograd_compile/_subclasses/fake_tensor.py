"""``torch._subclasses.fake_tensor``: see :mod:`autograd_compile.tracing.fake`."""
from ..tracing.fake import *  # noqa: F401,F403
from ..tracing.fake import FakeTensor, FakeTensorMode  # noqa: F401
