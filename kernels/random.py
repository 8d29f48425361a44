"""Random state and the sampling ops: ``Generator``, bernoulli, multinomial, randperm,
normal_, uniform_.

A :class:`Generator` hands out PRNG keys (uint32[2] tensors) drawn on the host from a PCG64
stream. Every random op takes its key as a Tensor *argument*: the op itself is pure, fake and
proxy modes see an ordinary op, and a captured graph gets the key as an input (a fresh one
each run), never a constant baked into the program.

>>> import autograd_compile as acg
>>> g = acg.Generator().manual_seed(3)
>>> a = acg.randperm(5, generator=g); _ = g.manual_seed(3)
>>> acg.equal(acg.randperm(5, generator=g), a)
True
"""
from __future__ import annotations

import hashlib
import secrets
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.devices.model import GENERATOR
from autograd_compile.tracing.fake import TensorMeta
from autograd_compile.tensor import Tensor, _make

from ._defop import NONDIFF, defop, same_shape
from ._dtypes import DEFAULT_INT, as_dtype, cast, is_float, to_float
from ._host import check_values, local_parts
from ._streams import uniform
from .shape import copy_

DEFAULT_SEED = 67280421310721  # PyTorch's default seed
_STATE_BYTES = 40  # seed (8) + PCG64 state (16) + increment (16), little-endian
_TORCH_CPU_STATE_BYTES = 5056  # what torch.get_rng_state() gives (CPUGeneratorImplState)


class Generator:
    """PyTorch's ``torch.Generator``: a seedable random state that random ops draw keys from.

    >>> import autograd_compile as acg
    >>> g = acg.Generator(); _ = g.manual_seed(7); s = g.get_state()
    >>> a = acg.rand(3, generator=g); _ = g.set_state(s)
    >>> acg.equal(acg.rand(3, generator=g), a), g.initial_seed()
    (True, 7)
    """

    def __init__(self, device: Any = "cpu") -> None:
        from autograd_compile.devices import as_device
        self.device = as_device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from ``seed``; returns the generator."""
        self._seed = int(seed) & (2 ** 64 - 1)
        self._bits = np.random.PCG64(self._seed)
        return self

    def _from_torch_state(self, b: bytes) -> "Generator":
        """A state PyTorch's CPU generator saved (a checkpoint's ``torch.get_rng_state()``):
        its initial seed (the first 8 bytes), and a stream started from a hash of the
        whole state, so equal states give equal draws. The draws are ours, never
        PyTorch's Mersenne Twister's: no stream here equals PyTorch's anyway."""
        self._bits = np.random.PCG64(int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(),
                                                    "little"))
        self._seed = int.from_bytes(b[:8], "little")
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the new seed."""
        seed = secrets.randbits(63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the stream last started from."""
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (for :meth:`set_state`)."""
        st = self._bits.state["state"]
        raw = b"".join(v.to_bytes(n, "little") for v, n in (
            (self._seed, 8), (st["state"], 16), (st["inc"], 16)))
        return _make(jnp.asarray(np.frombuffer(raw, np.uint8).copy()))

    def set_state(self, new_state: Tensor) -> "Generator":
        """Restore a state from :meth:`get_state`; returns the generator."""
        raw = np.asarray(new_state)
        if raw.dtype == np.uint8 and raw.shape == (_TORCH_CPU_STATE_BYTES,):
            return self._from_torch_state(raw.tobytes())
        if raw.dtype != np.uint8 or raw.shape != (_STATE_BYTES,):
            raise RuntimeError(f"Generator.set_state: expected a uint8 tensor of "
                               f"{_STATE_BYTES} bytes from get_state(), got {raw.dtype.name} of "
                               f"shape {list(raw.shape)}")
        b = raw.tobytes()
        self._seed = int.from_bytes(b[:8], "little")
        self._bits = np.random.PCG64()
        self._bits.state = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0, "state": {
            "state": int.from_bytes(b[8:24], "little"), "inc": int.from_bytes(b[24:], "little")}}
        return self

    def next_key(self) -> Tensor:
        """A fresh PRNG key (uint32[2]) for one random op; advances the stream."""
        raw = int(self._bits.random_raw())  # one host draw: cheaper than a jax split
        key = np.array([raw >> 32, raw & 0xFFFFFFFF], np.uint32)
        key.flags.writeable = False  # a host value (kept as numpy: 2 us, where making a jax
        return _make(key)  # array took 25; a program reading it moves it, as any host value)


default_generator = Generator()
GENERATOR.append(default_generator)  # torch.cuda's seeding (devices/model.py)


def key_of(generator: Generator | None) -> Tensor:
    """The next key of ``generator`` (the global one when None)."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"generator must be an acg.Generator, got {type(generator).__name__}")
    return (generator or default_generator).next_key()


def _key(data: Any) -> Any:
    return jax.random.wrap_key_data(data)


def _concrete(*arrays: Any) -> bool:
    """Eager values (checks on data are skipped while tracing)."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


# -- bernoulli ----------------------------------------------------------------------------------
def _check_p(p: Any, *rest: Any, **kwargs: Any) -> None:
    if _concrete(p) and hasattr(p, "shape") and p.size:
        a = check_values(p)  # a global array: this process's shards
        if not (a >= 0).all() or not (a <= 1).all():
            raise RuntimeError(f"bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got "
                               f"values in [{a.min()}, {a.max()}]")


def _bernoulli_rule(x: Any, key: Any) -> TensorMeta:
    if not is_float(x.dtype):
        raise RuntimeError(f"bernoulli: expected a floating-point tensor of probabilities, "
                           f"got {x.dtype.name}")
    return TensorMeta(tuple(x.shape), x.dtype)


bernoulli = defop("bernoulli(Tensor self, Tensor key) -> Tensor",
                  lambda p, key: cast(jax.random.uniform(_key(key), p.shape, to_float(p.dtype))
                                      < p, p.dtype),
                  shape=_bernoulli_rule, check=True, pre=_check_p, backward=NONDIFF)
bernoulli_p = defop("bernoulli.p(Tensor self, float p, Tensor key) -> Tensor",
                    lambda x, p, key: cast(jax.random.uniform(_key(key), x.shape) < p, x.dtype),
                    shape=lambda x, p, key: TensorMeta(tuple(x.shape), x.dtype),
                    backward=NONDIFF)


# -- multinomial ------------------------------------------------------------------------------
def _multinomial_rule(p: Any, n: int, replacement: bool, key: Any) -> TensorMeta:
    if p.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {p.ndim} dims "
                           f"(shape {list(p.shape)})")
    if not is_float(p.dtype):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{p.dtype.name}")
    if n <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {n})")
    if not replacement and n > p.shape[-1]:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           f"without replacement (n_sample={n}, categories={p.shape[-1]})")
    return TensorMeta(tuple(p.shape[:-1]) + (n,), DEFAULT_INT)


def _check_distribution(p: Any, n: int, replacement: bool, key: Any) -> None:
    """PyTorch's checks on the values (eager only: a traced tensor has none)."""
    if not _concrete(p):
        return
    a = np.concatenate([q.astype(np.float64).reshape(-1, p.shape[-1] if p.ndim else 1)  # rows
                        for q in local_parts(p)])  # a global array: its local rows
    if not np.isfinite(a).all() or (a < 0).any():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if (a.sum(-1) <= 0).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities "
                           "<= 0)")
    # without replacement, fewer non-zero categories than n_sample is no error (PyTorch 2.x):
    # the non-zero ones come first, then zero-probability ones fill the rest


def _multinomial(p: Any, n: int, replacement: bool, key: Any) -> Any:
    logits = jnp.log(p.astype(to_float(p.dtype)))
    if replacement:
        draws = jax.random.categorical(_key(key), logits, -1, (n,) + p.shape[:-1])
        return jnp.moveaxis(draws, 0, -1).astype(DEFAULT_INT)
    # Gumbel top-k: the k largest perturbed log-weights are a draw without replacement; a zero
    # weight's log is -inf, so zero-probability categories come last (lowest index first)
    noisy = logits + jax.random.gumbel(_key(key), p.shape, logits.dtype)
    return jax.lax.top_k(noisy, n)[1].astype(DEFAULT_INT)


multinomial = defop("multinomial(Tensor self, int num_samples, bool replacement, Tensor key) "
                    "-> Tensor", _multinomial, shape=_multinomial_rule, check=True,
                    pre=_check_distribution, backward=NONDIFF)


# -- randperm -----------------------------------------------------------------------------------
def _randperm_rule(n: Any, key: Any, dtype: Any = None) -> TensorMeta:
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    return TensorMeta((n,), as_dtype(dtype) if dtype is not None else DEFAULT_INT)


randperm = defop("randperm(SymInt n, Tensor key, *, ScalarType? dtype=None) -> Tensor",
                 lambda n, key, dtype=None: jax.random.permutation(_key(key), n).astype(
                     as_dtype(dtype) if dtype is not None else DEFAULT_INT),
                 shape=_randperm_rule, check=True, backward=NONDIFF)


def both_parts(shift: float, like: Any) -> Any:
    """A real shift of a complex sample moves both parts (PyTorch samples view_as_real)."""
    return complex(shift, shift) if getattr(like.dtype, "kind", "") == "c" else shift


# -- in-place fills: copy_ of a fresh sample (no history under no_grad, as in PyTorch) -----------
def _normal_(x: Any, mean: float = 0.0, std: float = 1.0, *, key: Any) -> Any:
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    noise = normal_sample(x, key)
    return copy_(x, noise * std + both_parts(mean, x) if (mean, std) != (0.0, 1.0) else noise)


def _uniform_(x: Any, from_: float = 0.0, to: float = 1.0, *, key: Any) -> Any:
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    return copy_(x, uniform_sample(x, key) * (to - from_) + both_parts(from_, x))


def _float_like(x: Any, key: Any) -> TensorMeta:
    if not is_float(x.dtype):
        raise RuntimeError(f"expected a floating-point tensor to fill with random values, got "
                           f"{x.dtype.name}")
    return same_shape(x)


normal_sample = defop("normal_sample(Tensor self, Tensor key) -> Tensor",
                      lambda x, key: jax.random.normal(_key(key), x.shape, x.dtype),
                      shape=_float_like, check=True, backward=NONDIFF)
uniform_sample = defop("uniform_sample(Tensor self, Tensor key) -> Tensor",
                       lambda x, key: uniform(_key(key), x.shape, x.dtype),
                       shape=_float_like, check=True, backward=NONDIFF)
normal_ = defop("normal_(Tensor(a!) self, float mean=0.0, float std=1.0, *, Tensor key) "
                "-> Tensor(a!)", composite=_normal_)
uniform_ = defop("uniform_(Tensor(a!) self, float from_=0.0, float to=1.0, *, Tensor key) "
                 "-> Tensor(a!)", composite=_uniform_)
