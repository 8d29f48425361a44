"""autograd-compile: PyTorch-style eager autograd on JAX, with compiled backward.

>>> import autograd_compile as acg
>>> x = acg.ones(3, requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 2.0, 2.0]
"""
from . import config  # noqa: E402  (first: it may set XLA_FLAGS before jax starts)

config.apply_xla_cpu_fix()
from . import compile_cache  # noqa: E402  (warmgpu: before any compile, JAX decides once)

compile_cache.configure()

from . import _moved  # noqa: E402

_moved.install(__name__)  # old paths (autograd_compile.fake, .cuda ...) answer from the start

import jax as _jax  # noqa: E402

_jax.config.update("jax_enable_x64", True)  # float64 must work; our factories default to float32

from .tensor import Tensor  # noqa: E402
from . import _fallbacks  # noqa: E402,F401
from . import autograd  # noqa: E402
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa
from .autograd.grad_mode import inference_mode, is_inference_mode_enabled  # noqa: E402
from . import devices  # noqa: E402
from .devices import device  # noqa: E402
from .dispatch import library as library  # noqa: E402
from .dispatch.library import ops  # noqa: E402
from .dispatch.dispatcher import DISPATCHER as dispatcher  # noqa: E402
from .modes import DispatchMode, enable_python_mode, no_dispatch  # noqa: E402
from . import tracing  # noqa: E402
from .tracing import fake  # noqa: E402

_moved.register(__name__)
from . import kernels  # noqa: E402
from .kernels.api import *  # noqa: E402,F401,F403
from .kernels.api_select import *  # noqa: E402,F401,F403
from .kernels._methods import install_tensor_methods as _install  # noqa: E402

_install(Tensor)

from .kernels.random import Generator, default_generator  # noqa: E402
from .devices import accelerator, cpu, cuda  # noqa: E402
int, float = int32, float32  # noqa: A001,F405  (PyTorch's aliases; here, not in kernels.api)

from . import nn, optim, utils  # noqa: E402
from . import backends, compiled_autograd  # noqa: E402
from ._flags import *  # noqa: E402,F401,F403
from ._types import Size, finfo, iinfo  # noqa: E402,F401
from . import version  # noqa: E402
from .version import __version__  # noqa: E402,F401
from ._printing import get_printoptions, set_printoptions  # noqa: E402,F401
from ._python_api import _assert, broadcast_shapes, e, inf, nan, newaxis, pi  # noqa: E402,F401
from . import distributed  # noqa: E402
from .nn import parallel as _nn_parallel  # noqa: E402,F401  (acg.nn.parallel)
nn.DataParallel = _nn_parallel.DataParallel  # (nn imports before distributed, parallel after)
from .tracing import proxy_tensor  # noqa: E402
from .tracing.proxy_tensor import make_fx  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import aot  # noqa: E402
from . import hub  # noqa: E402
from . import profiler  # noqa: E402  (torch.profiler)
# acg.autograd.profiler, imported from here: the profiler reaches into aot, which imports autograd
from .autograd import profiler as _autograd_profiler  # noqa: E402,F401
from .utils import model_zoo as _model_zoo  # noqa: E402,F401  (acg.utils.model_zoo)
from .aot import compile  # noqa: E402,A001  (torch.compile's analog shadows the builtin here)
from . import amp  # noqa: E402  (mixed precision: acg.amp, acg.cuda.amp, acg.cpu.amp)
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402

# -- issue 21 (optim/data helper): torch.multiprocessing
from . import multiprocessing  # noqa: E402
# -- vision: torch.conv2d, torch.max_pool1d, torch.pixel_shuffle, torch.grid_sampler... --
from .nn._torch_vision import *  # noqa: E402,F401,F403
# -- funclin: linalg / fft / special / func / autograd.functional / utils.checkpoint --
from . import linalg  # noqa: E402
from . import fft, special  # noqa: E402
from . import signal  # noqa: E402  (torch.signal.windows)
from . import func  # noqa: E402
from . import compiler, random, _dynamo  # noqa: E402,A004  (torch.compiler, torch.random)
from .kernels.api_funclin import *  # noqa: E402,F401,F403
from .kernels.api_funclin import install_funclin_methods as _install_funclin  # noqa: E402
_install_funclin(Tensor)
# distributions (wt/dist): torch.distributions
from . import distributions  # noqa: E402
# -- [xformer] tensor semantics: acg.dtype and the legacy tensor types (FloatTensor ...) ----------
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor,  # noqa: E402,F401
                      DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
                      dtype)
# -- long tail a-h
from .kernels.api_tail_a import *  # noqa: E402,F401,F403
from .kernels.api_tail_a import install_tail_a_methods as _install_tail_a  # noqa: E402
_install_tail_a(Tensor)
# -- long tail i-z
from .kernels.api_tail_b import *  # noqa: E402,F401,F403
from .kernels.api_tail_b import install_tail_b_methods as _install_tail_b  # noqa: E402
_install_tail_b(Tensor)
# -- tails (issue 20/21 leftovers): float8 dtypes; grouped/scaled mm live in nn.functional
from .kernels.api_tail_c import *  # noqa: E402,F401,F403
from .kernels.api_tail_c import install_tail_c_methods as _install_tail_c  # noqa: E402
_install_tail_c(Tensor)
# -- torch._foreach_*: an op over lists of tensors (after every op above exists)
from . import _foreach  # noqa: E402
_foreach.install(globals())
from . import jit, testing  # noqa: E402  (torch.jit, torch.testing)
# -- torch.sparse: sparse COO tensors (a Tensor subclass over indices and values) --
from . import sparse  # noqa: E402
from .sparse import sparse_coo, sparse_coo_tensor, sparse_csr, spmm  # noqa: E402,F401
sparse.install(Tensor)
