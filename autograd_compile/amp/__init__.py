"""``acg.amp``: automatic mixed precision, as PyTorch's ``torch.amp``.

Two independent pieces, used together for float16 training:

- :class:`autocast` (also ``acg.autocast``): inside the region, matmul-like ops (mm,
  linear, conv, attention, einsum, ...) run in a lower precision (bfloat16 on "cpu",
  float16 on "cuda") and ops that need range (losses; on "cuda" also softmax, layer_norm,
  exp, log, sum, ...) in float32. The op lists are the tables in :mod:`.policy`.
- :class:`GradScaler`: multiplies the loss by a scale so small float16 gradients survive,
  unscales before the optimizer step, skips steps whose gradients overflowed and adapts
  the scale.

How autocast is built: one dispatch key, ``Autocast``, the highest of all. Entering an
enabled autocast includes it in the thread's key set; its one kernel (a fallback for every
op, :func:`.autocast_mode.autocast_fallback`) looks the op up in the device's table,
casts eligible inputs with ordinary ``to`` ops, and calls the op below the key. Because
the casts are ops dispatched from above everything else, autograd records them (the
backward casts gradients back: a float32 parameter gets a float32 ``.grad``), modes see
them, and both tracers record them: ``acg.compile``'s joint trace contains the casts (and
guards on the autocast state), and compiled autograd captures their backward like any
other node. Backward formulas themselves never run under autocast.

PyTorch's training loop, unchanged::

    scaler = acg.amp.GradScaler("cuda", enabled=(dtype == "float16"))
    with acg.autocast(device_type="cuda", dtype=acg.float16):
        logits, loss = model(X, Y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    acg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()

>>> import autograd_compile as acg
>>> x, w = acg.ones(4, 3), acg.ones(2, 3, requires_grad=True)
>>> with acg.amp.autocast("cpu"):
...     y = acg.nn.functional.linear(x, w)
>>> y.sum().backward()
>>> str(y.dtype), str(w.grad.dtype)
('torch.bfloat16', 'torch.float32')
"""
from __future__ import annotations

import sys

from .. import devices as _devices
from . import cpu_amp, cuda_amp, policy
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype,
                            is_autocast_available, is_autocast_cache_enabled,
                            is_autocast_enabled)
from .grad_scaler import GradScaler, OptState

# ``from autograd_compile.cuda.amp import GradScaler`` (cuda and cpu are modules, not packages)
sys.modules.setdefault(__name__.rpartition(".")[0] + ".cuda.amp", cuda_amp)
sys.modules.setdefault(__name__.rpartition(".")[0] + ".cpu.amp", cpu_amp)
sys.modules.setdefault(__name__.rpartition(".")[0] + ".devices.cuda.amp", cuda_amp)
sys.modules.setdefault(__name__.rpartition(".")[0] + ".devices.cpu.amp", cpu_amp)
_devices.cuda.amp, _devices.cpu.amp = cuda_amp, cpu_amp  # acg.cuda.amp, acg.cpu.amp

__all__ = ["autocast", "GradScaler", "OptState", "custom_fwd", "custom_bwd",
           "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_cache_enabled", "cpu_amp", "cuda_amp", "policy"]
