"""``assert_close``: PyTorch's closeness check, tolerances and failure messages.

Inputs are matched pairwise (recursing through sequences and mappings); each pair is handled by
the first entry of :data:`_PAIR_KINDS` that accepts it (None, bool, Python number, tensor-like).
Tensor values are compared on the host in numpy, with each arithmetic step done in the dtype
PyTorch's CPU kernels use, so the mismatch counts and the numbers in the message are PyTorch's.
"""
from __future__ import annotations

import cmath
import collections.abc
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import autograd_compile as acg
from ..tensor import Tensor

__all__ = ["assert_close", "assert_allclose", "default_tolerances"]

Msg = str | Callable[[str], str] | None
_F32 = np.dtype(np.float32)  # the opmath dtype of float16 and bfloat16 kernels


def _precisions() -> dict[Any, tuple[float, float]]:
    """{dtype: (rtol, atol)}: PyTorch's defaults (other dtypes compare exactly)."""
    return {acg.float16: (1e-3, 1e-5), acg.bfloat16: (1.6e-2, 1e-5),
            acg.float32: (1.3e-6, 1e-5), acg.float64: (1e-7, 1e-7),
            acg.complex64: (1.3e-6, 1e-5), acg.complex128: (1e-7, 1e-7)}


def default_tolerances(*inputs: Any, dtype_precisions: dict | None = None
                       ) -> tuple[float, float]:
    """The loosest default ``(rtol, atol)`` over the dtypes of ``inputs`` (tensors or dtypes).

    >>> import autograd_compile as acg
    >>> default_tolerances(acg.zeros(1), acg.float16)
    (0.001, 1e-05)
    """
    table = dtype_precisions or _precisions()
    pairs = [table.get(x.dtype if isinstance(x, Tensor) else x, (0.0, 0.0)) for x in inputs]
    return max(r for r, _ in pairs), max(a for _, a in pairs)


# -- failures -------------------------------------------------------------------------------------
class _Fail(Exception):
    """A failed check: the exception type to raise, its message, and where in the inputs."""

    def __init__(self, kind: type[Exception], message: str, where: tuple = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where

    def error(self, msg: Msg = None) -> Exception:
        if isinstance(msg, str):  # a user's string replaces the whole text, as PyTorch
            return self.kind(msg)
        text = self.message
        if self.where:
            text += "\n\nThe failure occurred for item " + "".join(str([k]) for k in self.where)
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This pair kind does not handle these inputs: try the next one."""


@dataclass(frozen=True)
class _Options:
    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_device: bool
    check_dtype: bool
    check_layout: bool
    check_stride: bool


def _tolerances(dtypes: list, opts: _Options, where: tuple) -> tuple[float, float]:
    if (opts.rtol is None) != (opts.atol is None):  # one alone could pass by the other's slack
        missing = "rtol" if opts.rtol is None else "atol"
        raise _Fail(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, "
                                f"but got no {missing}.", where)
    if opts.rtol is not None:
        return opts.rtol, opts.atol
    return default_tolerances(*dtypes)


# -- messages -------------------------------------------------------------------------------------
def _diff_line(kind: str, diff: Any, index: tuple | None, tol: float, exact: bool) -> str:
    line = (f"{kind.title()} difference: {diff}" if index is None
            else f"Greatest {kind} difference: {diff} at index {index}")
    return line + ("" if exact else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier: str, extra: str, abs_diff: Any, abs_idx: tuple | None,
                  rel_diff: Any, rel_idx: tuple | None, rtol: float, atol: float) -> str:
    exact = rtol == 0 and atol == 0
    text = f"{identifier} are not {'equal' if exact else 'close'}!\n\n{extra.strip()}\n"
    text += _diff_line("absolute", abs_diff, abs_idx, atol, exact)
    text += _diff_line("relative", rel_diff, rel_idx, rtol, exact)
    return text.strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float,
                identifier: str = "Scalars") -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier, f"Expected {expected} but got {actual}.", abs_diff, None,
                         rel_diff, None, rtol, atol)


def _tensor_msg(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float
                ) -> str:
    total, bad = matches.size, int(matches.size - matches.sum())
    extra = f"Mismatched elements: {bad} / {total} ({bad / total:.1%})"
    if a.dtype.kind == "V" and a.dtype.itemsize == 1:  # float8: no differences, only where
        first = tuple(int(i) for i in np.argwhere(~matches)[0])
        return (f"Tensor-likes are not 'equal'!\n\n{extra}\n"
                f"The first mismatched element is at index {first}.")
    a, e, hit = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype.kind in "biu":  # PyTorch widens integers to int64 before subtracting
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = _abs(a - e)
        abs_diff[hit] = 0
        denom = _abs(e)
        if abs_diff.dtype.kind == "i":  # int64 / int64: a true division in the default dtype
            default = np.dtype(acg.get_default_dtype().dtype)
            rel_diff = abs_diff.astype(default) / denom.astype(default)
        else:
            rel_diff = abs_diff / denom
        rel_diff[hit] = 0
    ai, ri = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _mismatch_msg("Tensor-likes", extra, abs_diff[ai].item(), _unravel(ai, matches.shape),
                         float(rel_diff[ri]), _unravel(ri, matches.shape), rtol, atol)


def _abs(x: np.ndarray) -> np.ndarray:
    """|x|; a complex one as PyTorch's kernels compute it (hypot, not numpy's own algorithm)."""
    return np.hypot(x.real, x.imag) if x.dtype.kind == "c" else np.abs(x)


def _unravel(flat: int, shape: tuple) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


# -- closeness, as PyTorch's CPU isclose computes it ----------------------------------------------
def _reduced(dtype: np.dtype) -> bool:
    """float16 and bfloat16: PyTorch computes in float32 and rounds each result."""
    return dtype.kind in "fV" and dtype.itemsize == 2


def _errors(a: np.ndarray, e: np.ndarray, rtol: float, atol: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """(|a - e|, atol + |rtol * e|), each step in the dtype PyTorch's kernels use."""
    dt, default = a.dtype, np.dtype(acg.get_default_dtype().dtype)
    if dt.kind == "b":  # booleans are compared as the default float dtype
        a, e, dt = a.astype(default), e.astype(default), default
    if dt.kind in "iu":  # the tolerance is a default-dtype tensor; the difference stays integer
        allowed = np.abs(e.astype(default) * default.type(rtol)) + default.type(atol)
        return np.abs(a - e).astype(default), allowed
    if _reduced(dt):  # scalars stay float32 (not rounded to the dtype) in the kernel
        a32, e32 = a.astype(_F32), e.astype(_F32)
        scaled = np.abs((e32 * np.float32(rtol)).astype(dt)).astype(_F32)
        allowed = (scaled + np.float32(atol)).astype(dt)
        return np.abs((a32 - e32).astype(dt)), allowed
    return _abs(a - e), _abs(e * rtol) + atol  # numpy 2: Python scalars take the dtype


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool
             ) -> np.ndarray:
    with np.errstate(all="ignore"):
        close = np.asarray(a == e)
        if equal_nan and a.dtype.kind in "fcV":
            close |= np.isnan(a) & np.isnan(e)
        if rtol == 0 and atol == 0:
            return close
        actual, allowed = _errors(a, e, rtol, atol)
        return close | (np.isfinite(actual) & (actual <= allowed))


# -- pair kinds: each returns a check for the pair, or raises _Unsupported ------------------------
def _none_pair(a: Any, e: Any, where: tuple, opts: _Options) -> Callable[[], None]:
    if a is not None and e is not None:
        raise _Unsupported

    def check() -> None:
        if not (a is None and e is None):
            raise _Fail(AssertionError, f"None mismatch: {a} is not {e}", where)
    return check


def _bool_pair(a: Any, e: Any, where: tuple, opts: _Options) -> Callable[[], None]:
    if not all(isinstance(x, (bool, np.bool_)) for x in (a, e)):
        raise _Unsupported
    a, e = bool(a), bool(e)

    def check() -> None:
        if a is not e:
            raise _Fail(AssertionError, f"Booleans mismatch: {a} is not {e}", where)
    return check


_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


def _number_pair(a: Any, e: Any, where: tuple, opts: _Options) -> Callable[[], None]:
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (a, e)):
        raise _Unsupported
    a, e = (x.item() if isinstance(x, np.number) else x for x in (a, e))
    dtypes = [getattr(acg, _NUMBER_DTYPES[int if isinstance(x, bool) else type(x)])
              for x in (a, e)]
    rtol, atol = _tolerances(dtypes, opts, where)

    def check() -> None:
        if opts.check_dtype and type(a) is not type(e):
            raise _Fail(AssertionError,
                        f"The (d)types do not match: {type(a)} != {type(e)}.", where)
        if a == e or (opts.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= atol + rtol * abs(e):
            return
        raise _Fail(AssertionError, _scalar_msg(a, e, rtol, atol), where)
    return check


def _as_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    try:
        return acg.as_tensor(x)
    except Exception:  # noqa: BLE001  (anything as_tensor cannot take: not a tensor-like)
        raise _Unsupported from None


def _tensor_pair(a: Any, e: Any, where: tuple, opts: _Options) -> Callable[[], None]:
    if not (isinstance(a, type(e)) or isinstance(e, type(a))):
        raise _Unsupported  # only directly related types, as PyTorch
    if not opts.allow_subclasses and type(a) is not type(e):
        raise _Unsupported
    a, e = _as_tensor(a), _as_tensor(e)
    rtol, atol = _tolerances([a.dtype, e.dtype], opts, where)
    return lambda: _compare_tensors(a, e, rtol, atol, opts, where)


_PAIR_KINDS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


# -- tensors --------------------------------------------------------------------------------------
def _attribute_fail(name: str, a: Any, e: Any, where: tuple) -> _Fail:
    return _Fail(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.",
                 where)


def _check_attributes(a: Tensor, e: Tensor, opts: _Options, where: tuple) -> None:
    if tuple(a.shape) != tuple(e.shape):  # printed as PyTorch prints sizes
        raise _attribute_fail("shape", f"torch.Size({list(a.shape)})",
                              f"torch.Size({list(e.shape)})", where)
    if a.layout != e.layout:
        if opts.check_layout:
            raise _attribute_fail("layout", a.layout, e.layout, where)
    elif opts.check_stride and a.stride() != e.stride():
        raise _attribute_fail("stride()", a.stride(), e.stride(), where)
    if opts.check_device and a.device != e.device:
        raise _attribute_fail("device", a.device, e.device, where)
    if opts.check_dtype and a.dtype != e.dtype:
        raise _attribute_fail("dtype", a.dtype, e.dtype, where)


def _host_arrays(a: Tensor, e: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Both as numpy arrays of one dtype (PyTorch's promotion, unsigned wide ones as int64)."""
    if a.dtype != e.dtype:
        wide = (acg.uint16, acg.uint32, acg.uint64)
        da, de = (acg.int64 if t.dtype in wide else t.dtype for t in (a, e))
        common = acg.promote_types(da, de)
        a, e = a.to(common), e.to(common)
    return tuple(np.asarray(t.detach().cpu().numpy()) for t in (a, e))  # type: ignore


def _compare_tensors(a: Tensor, e: Tensor, rtol: float, atol: float, opts: _Options,
                     where: tuple) -> None:
    _check_attributes(a, e, opts, where)
    if "meta" in (a.device.type, e.device.type):  # no values: the attributes are all there is
        return
    x, y = _host_arrays(a, e)
    if x.dtype.kind == "V" and x.dtype.itemsize == 1 and (rtol != 0.0 or atol != 0.0):
        raise _Fail(AssertionError, f"Rtol={rtol} and atol={atol} are not supported for bitwise "
                    "comparison of low dimensional floats. Please use rtol=0.0 and atol=0.0.")
    matches = _isclose(x, y, rtol, atol, opts.equal_nan)
    if matches.all():
        return
    if x.shape == ():
        message = _scalar_msg(x.item(), y.item(), rtol, atol)
    else:
        message = _tensor_msg(x, y, matches, rtol, atol)
    raise _Fail(AssertionError, message, where)


# -- pairing --------------------------------------------------------------------------------------
def _is_sequence(x: Any) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pairs(a: Any, e: Any, where: tuple, opts: _Options) -> list[Callable[[], None]]:
    """One check per leaf pair; structure mismatches fail here, before any value is compared."""
    if _is_sequence(a) and _is_sequence(e):
        if len(a) != len(e):
            raise _Fail(AssertionError,
                        f"The length of the sequences mismatch: {len(a)} != {len(e)}", where)
        return [c for i in range(len(a)) for c in _pairs(a[i], e[i], (*where, i), opts)]
    if isinstance(a, collections.abc.Mapping) and isinstance(e, collections.abc.Mapping):
        return _mapping_pairs(a, e, where, opts)
    for kind in _PAIR_KINDS:
        try:
            return [kind(a, e, where, opts)]
        except _Unsupported:
            continue
    raise _Fail(TypeError, f"No comparison pair was able to handle inputs of type {type(a)} "
                           f"and {type(e)}.", where)


def _mapping_pairs(a: collections.abc.Mapping, e: collections.abc.Mapping, where: tuple,
                   opts: _Options) -> list[Callable[[], None]]:
    ka, ke = set(a.keys()), set(e.keys())
    if ka != ke:
        raise _Fail(AssertionError, "The keys of the mappings do not match:\n"
                    f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                    f"Additional keys in the actual mapping: {sorted(ka - ke)}", where)
    try:  # a fixed order, so the first failure reported does not depend on hashing
        keys: list = sorted(ka)
    except TypeError:
        keys = list(ka)
    return [c for k in keys for c in _pairs(a[k], e[k], (*where, k), opts)]


# -- the public functions -------------------------------------------------------------------------
def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Msg = None) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and numpy arrays) must match in shape, and in device, dtype and layout unless the
    ``check_*`` flag is off; their values satisfy ``|actual - expected| <= atol + rtol *
    |expected|`` (infinities only equal themselves, NaNs only with ``equal_nan``). Omitted
    tolerances default per dtype: float16 ``1e-3/1e-5``, bfloat16 ``1.6e-2/1e-5``, float32
    ``1.3e-6/1e-5``, float64 ``1e-7/1e-7`` (complex likewise), integers and bool exact (give
    both ``rtol`` and ``atol`` or neither). Python scalars compare with scalars, and nested
    sequences and mappings elementwise. A failure raises ``AssertionError`` with PyTorch's
    text; ``msg`` (a string, or a function of the generated text) replaces it.

    >>> import autograd_compile as acg
    >>> assert_close(acg.tensor([1.0, 2.0]), acg.tensor([1.0, 2.0 + 1e-7]))
    >>> try:
    ...     assert_close(acg.tensor([1.0, 2.0]), acg.tensor([1.0, 3.0]))
    ... except AssertionError as e:
    ...     print(e)
    Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 1.0 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.3333333432674408 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    opts = _Options(allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype,
                    check_layout, check_stride)
    try:
        checks = _pairs(actual, expected, (), opts)
    except _Fail as f:  # structure and type errors keep their own text, as PyTorch
        raise f.error() from None
    for check in checks:
        try:
            check()
        except _Fail as f:
            raise f.error(msg) from None


_ALLCLOSE_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (as in PyTorch): :func:`assert_close` with looser defaults and any dtypes.

    >>> import warnings, autograd_compile as acg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     assert_allclose(acg.tensor([1.0]), [1.00001])
    """
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead. You can "
                  "find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = acg.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = acg.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        table = {getattr(acg, k): v for k, v in _ALLCLOSE_PRECISIONS.items()}
        rtol, atol = default_tolerances(actual, expected, dtype_precisions=table)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
