"""``acg.amp.GradScaler``: dynamic loss scaling for float16 training (PyTorch's semantics).

``scale(loss)`` multiplies by the scale (a recorded op, so the backward produces scaled
gradients); ``unscale_(optimizer)`` divides every gradient of the optimizer by it and
notes whether any is inf/NaN, in one jitted function over all of them; ``step`` skips
``optimizer.step()`` when one was; ``update`` backs the scale off after a skipped step
and grows it after ``growth_interval`` clean steps in a row.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum
from typing import Any, Iterable

import jax
import jax.numpy as jnp

from ..devices import gpu_count
from ..tensor import Tensor, _make

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where one optimizer is in the iteration (PyTorch's states)."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


@jax.jit
def _unscale_and_check(grads: tuple, inv_scale: Any) -> tuple[tuple, Any]:
    """Every gradient times ``inv_scale`` (in float32 or wider) and 1.0 if any of them had
    an inf or NaN before, else 0.0: PyTorch's _amp_foreach_non_finite_check_and_unscale_."""
    found = jnp.zeros((), jnp.float32)
    out = []
    for g in grads:
        wide = g.astype(jnp.promote_types(g.dtype, jnp.float32))
        found = jnp.maximum(found, jnp.any(~jnp.isfinite(wide)).astype(jnp.float32))
        out.append((wide * inv_scale.astype(wide.dtype)).astype(g.dtype))
    return tuple(out), found


@jax.jit
def _update_scale(scale: Any, tracker: Any, found_inf: Any, growth_factor: Any,
                  backoff_factor: Any, growth_interval: Any) -> tuple[Any, Any]:
    """PyTorch's _amp_update_scale_: back off on inf, grow after ``growth_interval`` clean
    steps (only to a finite scale), else count the clean step."""
    successful = tracker + 1
    grow = successful == growth_interval
    grown = scale * growth_factor
    clean_scale = jnp.where(grow & jnp.isfinite(grown), grown, scale)
    inf = found_inf > 0
    new_scale = jnp.where(inf, scale * backoff_factor, clean_scale)
    new_tracker = jnp.where(inf | grow, 0, successful).astype(tracker.dtype)
    return new_scale.astype(scale.dtype), new_tracker


_FIX = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier in "
        "the iteration.")


class GradScaler:
    """Scale the loss so float16 gradients do not underflow; skip steps whose gradients
    overflowed and adapt the scale (PyTorch's ``torch.amp.GradScaler``).

    ``enabled=False`` makes every method a pass-through (``step`` just calls
    ``optimizer.step()``); ``device="cuda"`` without a GPU warns and disables itself.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(2))
    >>> opt = acg.optim.SGD([w], lr=0.5)
    >>> scaler = acg.amp.GradScaler("cpu", init_scale=8.0)
    >>> scaler.scale((w * 2).sum()).backward()
    >>> w.grad.tolist()
    [16.0, 16.0]
    >>> scaler.step(opt); scaler.update()
    >>> w.tolist(), scaler.get_scale()
    ([0.0, 0.0], 8.0)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device, self._enabled = device, enabled
        if device == "cuda" and enabled and gpu_count() == 0:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # created at the first scale() call
            self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict[int, dict[str, Any]] = \
                defaultdict(_fresh_state)

    # -- scaling ----------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + _FIX
        assert self._growth_tracker is not None, \
            f"Attempted {funcname} but _growth_tracker is None.  " + _FIX
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = _make(jax.device_put(jnp.full((), self._init_scale, jnp.float32), dev))
        self._growth_tracker = _make(
            jax.device_put(jnp.full((), self._init_growth_tracker, jnp.int32), dev))

    def scale(self, outputs: Tensor | Iterable[Any]) -> Any:
        """``outputs`` (a tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale_for(outputs)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(v) for v in outputs)
        if isinstance(outputs, Iterable) and not isinstance(outputs, (str, bytes)):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _scale_for(self, t: Tensor) -> Tensor:
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(_jax_device(t))
        return self._scale.to(t.device)

    # -- unscaling and stepping --------------------------------------------------------------
    def _unscale_grads_(self, optimizer: Any, inv_scale: Any, allow_fp16: bool
                        ) -> dict[Any, Tensor]:
        """Unscale every gradient of ``optimizer`` in place, one jitted call per device;
        returns ``{device: found_inf}``."""
        by_device: defaultdict[Any, list[Tensor]] = defaultdict(list)
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if not allow_fp16 and g.dtype == jnp.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                by_device[_jax_device(g)].append(g)
        found_per_device = {}
        for dev, grads in by_device.items():
            new, found = _unscale_and_check(tuple(g._data for g in grads),
                                            jax.device_put(inv_scale, dev))
            for g, a in zip(grads, new):
                g._set_data(a)
            found_per_device[dev] = _make(found)
        return found_per_device

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale (once per step; ``step`` does it
        if you did not), e.g. to clip the true gradients before ``step``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch (float32 division can be imprecise)
        inv_scale = (1.0 / self._scale._data.astype(jnp.float64)).astype(jnp.float32)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, return_found_inf: bool = False,
             **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` ran), then ``optimizer.step(*args, **kwargs)`` unless a
        gradient is inf/NaN; returns what ``optimizer.step`` returned (None when skipped)."""
        if not self._enabled:
            retval = optimizer.step(*args, **kwargs)
            return (retval, False) if return_found_inf else retval
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(state["found_inf_per_device"]) > 0, \
            "No inf checks were recorded for this optimizer."
        found_inf = any(bool(v.item()) for v in state["found_inf_per_device"].values())
        retval = None if found_inf else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return (retval, found_inf) if return_found_inf else retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off if a step was skipped, grow it after ``growth_interval`` clean
        steps; or set it to ``new_scale``. Call once per iteration, after every ``step``."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found = [f._data for s in self._per_optimizer_states.values()
                     for f in s["found_inf_per_device"].values()]
            assert len(found) > 0, "No inf checks were recorded prior to update."
            dev = _jax_device(scale)
            combined = jax.device_put(found[0], dev)
            for f in found[1:]:
                combined = combined + jax.device_put(f, dev)
            s, t = _update_scale(scale._data, tracker._data, combined, self._growth_factor,
                                 self._backoff_factor, self._growth_interval)
            scale._set_data(s)
            tracker._set_data(t)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _set_scale(self, new_scale: float | Tensor) -> None:
        assert self._scale is not None
        if isinstance(new_scale, Tensor):
            reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                      "torch.FloatTensor with requires_grad=False.")
            assert new_scale.numel() == 1, reason
            assert new_scale.requires_grad is False, reason
            value = new_scale._data.reshape(()).astype(jnp.float32)
        else:
            value = jnp.full((), new_scale, jnp.float32)
        self._scale._set_data(jax.device_put(value, _jax_device(self._scale)))

    # -- queries and state ------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether this scaler scales (False when built disabled or disabled for no GPU)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when
        disabled); take it after ``update()``."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` returned (a no-op when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._set_scale(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker._set_data(jnp.full((), self._init_growth_tracker, jnp.int32))

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            assert len(self._per_optimizer_states) == 0, (
                "A GradScaler instance may only be pickled at the beginning of an iteration, "
                "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _jax_device(t: Tensor) -> Any:
    """The jax device a tensor's array lives on."""
    devices = getattr(t._data, "devices", None)
    return next(iter(devices())) if devices else jax.local_devices()[0]
