"""Ordering, selection by value, comparison and contraction: sort, topk, isclose, einsum.

sort/topk return (values, indices); the gradient of the values flows back to the positions
the indices name (a scatter_add), the indices get none. einsum's gradient for each operand is
another einsum (of the output gradient with the other operands), so it differentiates again.

>>> import autograd_compile as acg
>>> acg.topk(acg.tensor([1.0, 5.0, 3.0]), 2).indices.tolist()
[1, 2]
"""
from __future__ import annotations

import string
from typing import Any

import jax
import jax.numpy as jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import NONDIFF, defop, holomorphic, reduce_grad
from ._dtypes import BOOL, DEFAULT_INT, cast, result_type
from ._shapes import broadcast_shapes, wrap_dim
from .factories import eye, zeros
from .indexing import scatter_add


# -- sort / topk ----------------------------------------------------------------------------------
def _last(x: Any, dim: int) -> tuple[Any, int]:
    """``x`` with ``dim`` moved last (a 0-d tensor as one element), and the wrapped dim."""
    if x.ndim == 0:
        return x.reshape(1), 0
    d = wrap_dim(dim, x.ndim)
    return jnp.moveaxis(x, d, -1), d


def _back(v: Any, x: Any, d: int) -> Any:
    return v.reshape(()) if x.ndim == 0 else jnp.moveaxis(v, -1, d)


def _sort(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple:
    y, d = _last(x, dim)
    i = jnp.argsort(y, axis=-1, stable=True, descending=descending)  # stable: ties keep order
    v = jnp.take_along_axis(y, i, -1)
    return _back(v, x, d), _back(i.astype(DEFAULT_INT), x, d)


def _topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    y, d = _last(x, dim)
    if largest and y.dtype != BOOL:
        v, i = jax.lax.top_k(y, k)
    else:
        i = jnp.argsort(y, axis=-1, stable=True, descending=largest)[..., :k]
        v = jnp.take_along_axis(y, i, -1)
    return _back(v, x, d), _back(i.astype(DEFAULT_INT), x, d)


def _pair(x: Any, shape: tuple) -> tuple[TensorMeta, TensorMeta]:
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _sort_rule(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple:
    wrap_dim(dim, x.ndim)
    return _pair(x, tuple(x.shape))


def _topk_rule(x: Any, k: Any, dim: int = -1, largest: bool = True, sorted: bool = True
               ) -> tuple:
    d = wrap_dim(dim, x.ndim)
    size = x.shape[d] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk: selected index k out of range (k={k}, size of dim {dim} is "
                           f"{size})")
    return _pair(x, tuple(x.shape[:d]) + (k,) + tuple(x.shape[d + 1:]) if x.ndim else ())


def _scatter_back(g: tuple, x: Any, dim: int, out: tuple) -> Any:
    """d(values) back to the positions ``indices`` name (indices get no gradient)."""
    gv, idx = g[0], out[1]
    if gv is None:
        return None
    if x.ndim == 0:
        return gv.sum() if gv.ndim else gv
    base = zeros(list(x.shape), dtype=gv.dtype)
    return reduce_grad(scatter_add(base, wrap_dim(dim, x.ndim), idx, gv), x)


_VALUES_INDICES = "-> (Tensor values, Tensor indices)"
sort = defop("sort(Tensor self, int dim=-1, bool descending=False, bool stable=False) "
             + _VALUES_INDICES, _sort, shape=_sort_rule, save=("out[1]",),
             backward=lambda g, x, dim, descending, stable, out: _scatter_back(g, x, dim, out))
topk = defop("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) "
             + _VALUES_INDICES, _topk, shape=_topk_rule, check=True, save=("out[1]",),
             backward=lambda g, x, k, dim, largest, sorted, out: _scatter_back(g, x, dim, out))


# -- isclose ------------------------------------------------------------------------------------
def _isclose_rule(x: Any, y: Any, rtol: float = 1e-5, atol: float = 1e-8,
                  equal_nan: bool = False) -> TensorMeta:
    if x.dtype != y.dtype:
        raise RuntimeError(f"isclose: {x.dtype.name} did not match {y.dtype.name} (both tensors "
                           f"must have the same dtype)")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be greater than or equal to zero, but "
                           f"got rtol={rtol}, atol={atol}")
    return TensorMeta(broadcast_shapes(tuple(x.shape), tuple(y.shape)), BOOL)


isclose = defop("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, "
                "bool equal_nan=False) -> Tensor",
                lambda x, y, rtol=1e-5, atol=1e-8, equal_nan=False: jnp.isclose(
                    x, y, rtol, atol, equal_nan), shape=_isclose_rule, check=True,
                static=("rtol", "atol"), backward=NONDIFF)


# -- einsum ---------------------------------------------------------------------------------------
def parse_einsum(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    """Explicit letters for every operand and the output ("..." replaced by spare letters,
    right-aligned; without "->", the letters used once, sorted, after the ellipsis).

    >>> parse_einsum("...ij,jk", [3, 2])
    (['Aij', 'jk'], 'Aik')
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        more = "more" if len(ndims) > len(ins) else "fewer"
        raise RuntimeError(f"einsum(): {more} operands were provided than specified in the "
                           f"equation '{equation}' ({len(ndims)} operands)")
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    rank = max([n - len(s) + 3 for s, n in zip(ins, ndims) if "..." in s] or [0])
    ell = "".join(spare[:rank])
    out_ins = [_operand_letters(s, n, ell, i, equation) for i, (s, n) in
               enumerate(zip(ins, ndims))]
    if arrow:
        out = rhs.replace("...", ell)
    else:
        used = "".join(out_ins)
        out = ell + "".join(sorted(c for c in set(used) if used.count(c) == 1 and c not in ell))
    for c in out:
        if c not in "".join(out_ins) or out.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once or not "
                               f"in any operand of '{equation}'")
    return out_ins, out


def _operand_letters(s: str, ndim: int, ell: str, i: int, equation: str) -> str:
    if "..." in s:
        n = ndim - (len(s) - 3)
        if n < 0:
            raise RuntimeError(f"einsum(): the number of subscripts in '{s}' is more than the "
                               f"number of dimensions ({ndim}) of operand {i}")
        s = s.replace("...", ell[len(ell) - n:])
    elif len(s) != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does "
                           f"not match the number of dimensions ({ndim}) for operand {i} and no "
                           f"ellipsis was given ('{equation}')")
    if not all(c in string.ascii_letters for c in s):
        raise RuntimeError(f"einsum(): invalid subscript given in '{equation}': subscripts must "
                           f"be letters in [a-zA-Z]")
    return s


def _letter_sizes(ins: list[str], shapes: list[tuple], equation: str) -> dict:
    """Each letter's size; a size-1 dim broadcasts against the others."""
    sizes: dict = {}
    for i, (s, shape) in enumerate(zip(ins, shapes)):
        for c, n in zip(s, shape):
            if c not in sizes or sizes[c] == 1:
                sizes[c] = n
            elif n != 1 and n != sizes[c]:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: "
                                   f"subscript {c} has size {sizes[c]} and size {n} (operand "
                                   f"{i}) in '{equation}'")
    return sizes


def _plan(equation: str, tensors: list) -> tuple[list[str], str, dict]:
    ins, out = parse_einsum(equation, [t.ndim for t in tensors])
    return ins, out, _letter_sizes(ins, [tuple(t.shape) for t in tensors], equation)


def _einsum(equation: str, tensors: list) -> Any:
    ins, out, sizes = _plan(equation, tensors)
    dtype = result_type(*tensors)
    full = [jnp.broadcast_to(cast(t, dtype), tuple(sizes[c] for c in s))
            for t, s in zip(tensors, ins)]
    return jnp.einsum(f"{','.join(ins)}->{out}", *full)


def _einsum_rule(equation: str, tensors: list) -> TensorMeta:
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    ins, out, sizes = _plan(equation, tensors)
    return TensorMeta(tuple(sizes[c] for c in out), result_type(*tensors))


def _einsum_backward(g: Any, equation: str, tensors: list, out: Any) -> list:
    ins, out_letters, sizes = _plan(equation, tensors)
    return [_operand_grad(g, i, ins, out_letters, sizes, tensors) for i in range(len(tensors))]


def _operand_grad(g: Any, i: int, ins: list, out: str, sizes: dict, tensors: list) -> Any:
    """d/d(operand i): einsum of g with the others; letters summed away only here come back
    by broadcasting. A letter repeated within the operand (a diagonal) is differentiated as
    the diagonal-extracted operand, then embedded back onto that diagonal."""
    s = ins[i]
    u = "".join(dict.fromkeys(s))  # the operand's distinct letters, in order
    others = [t for j, t in enumerate(tensors) if j != i]
    avail = set(out).union(*(ins[j] for j in range(len(ins)) if j != i))
    keep = "".join(c for c in u if c in avail)
    spec = ",".join([out] + [ins[j] for j in range(len(ins)) if j != i])
    r = einsum(f"{spec}->{keep}", [g] + others)
    for pos, c in enumerate(u):
        if c not in avail:
            r = r.unsqueeze(pos)
    if keep != u:
        r = r.expand([sizes[c] for c in u])
    if u != s:
        r = _embed_diagonal(r, u, s, sizes)
    return reduce_grad(r, tensors[i])


def _embed_diagonal(r: Any, u: str, s: str, sizes: dict) -> Any:
    """``r`` (letters ``u``) written onto the diagonals of a zero tensor with letters ``s``,
    where ``s`` repeats some of ``u``'s letters: each repeat gets a fresh letter tied to its
    first occurrence by an identity matrix, so the result is one (differentiable) einsum."""
    spare = iter(c for c in string.ascii_letters if c not in s)
    seen: set = set()
    full, ties = "", []
    for c in s:
        if c in seen:
            fresh = next(spare)
            full += fresh
            ties.append((c, fresh))
        else:
            seen.add(c)
            full += c
    eyes = [eye(sizes[c], dtype=r.dtype) for c, _ in ties]
    spec = ",".join([u] + [c + fresh for c, fresh in ties])
    return einsum(f"{spec}->{full}", [r] + eyes)


einsum = defop("einsum(str equation, Tensor[] tensors) -> Tensor", _einsum, shape=_einsum_rule,
               check=True, save=("tensors",), backward=holomorphic(_einsum_backward))
