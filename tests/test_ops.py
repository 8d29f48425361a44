"""The op spec: one table of cases drives every op test.

Each :class:`Case` is an op written twice, on acg tensors (``fn``) and on jnp arrays
(``ref``), plus its inputs. From the table:
  1. forward matches jnp (float64), and float32 stays float32 (a subset, real kernels);
  2. backward matches ``jax.vjp`` of the jnp version (float64, tight tolerance);
  3. backward matches central differences along random directions (float64);
  4. fake tensors (concrete and symbolic sizes) give the real shapes and dtypes;
  5. double backward matches jax (cases marked ``double``), w.r.t. inputs and cotangents;
  6. in-place variants (second table) match out-of-place, bump ``_version``, and
     differentiate like the out-of-place op; in-place ops on views write through.
The Python surface (factories, dtype promotion, node names, casts) is in test_tensor_api.py.
"""
from __future__ import annotations

import functools
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.kernels import _xp
from autograd_compile.tracing.fake import FakeTensor, FakeTensorMode
from autograd_compile.tracing.symbolic_shapes import ShapeEnv, hint_int


from _op_spec import Arg, B, C, Case, I, P, T, U, V, _values  # noqa: F401
from op_cases_more import MORE_CASES
from op_cases_nn import NN_CASES
from op_cases_tensor import TENSOR_CASES
from op_cases_tails import TAILS_CASES  # tails: grouped_mm


def _is_float_arg(a: Any) -> bool:
    return isinstance(a, Arg) and a.kind == "float"


def _arrays(case: Case, dtype: Any) -> list:
    """Numpy arrays for the tensor inputs (floats in ``dtype``); other arguments as they are."""
    return [v if not isinstance(s, Arg) else np.asarray(v, dtype) if s.kind in ("float", "const")
            else np.asarray(v) for s, v in zip(case.args, _values(case))]


def _jnp_inputs(case: Case, dtype: Any) -> list:
    """The jnp arguments of a case (numpy and jax only: safe in the reference thread)."""
    return [jax.device_put(v) if isinstance(s, Arg) else v
            for s, v in zip(case.args, _arrays(case, dtype))]


def _inputs(case: Case, dtype: Any, requires_grad: bool = False) -> list:
    """The acg arguments of a case; float inputs in ``dtype`` (leaves if requires_grad)."""
    return [acg.tensor(v, requires_grad=requires_grad and s.kind == "float")
            if isinstance(s, Arg) else v for s, v in zip(case.args, _arrays(case, dtype))]


def _flat(out: Any) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _float_outputs(out: Any) -> list:
    return [o for o in _flat(out) if jnp.issubdtype(o.dtype, jnp.floating)]


# -- the table -----------------------------------------------------------------------------------
def _ln_ref(x, shape, w=None, b=None, eps=1e-5):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(dims, keepdims=True)
    y = (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(dims, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _rms_ref(x, shape, w=None, eps=None):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    eps = jnp.finfo(x.dtype).eps if eps is None else eps
    return x / jnp.sqrt((x * x).mean(dims, keepdims=True) + eps) * (1 if w is None else w)


def _ce_ref(x, t, w=None, reduction="mean", ignore=-100, ls=0.0):
    c = 1 if x.ndim > 1 else 0
    logp = jax.nn.log_softmax(x, axis=c)
    valid = t != ignore
    ts = jnp.where(valid, t, 0)
    onehot = jax.nn.one_hot(ts, x.shape[c], axis=c, dtype=x.dtype)
    wc = jnp.ones(x.shape[c], x.dtype) if w is None else w
    wshape = (-1,) + (1,) * (x.ndim - c - 1)
    wt = wc[ts] * valid
    nll = -(logp * onehot).sum(c) * wt
    smooth = -(logp * wc.reshape(wshape)).sum(c) * valid
    loss = (1 - ls) * nll + ls / x.shape[c] * smooth
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / wt.sum()}[reduction]


_MASK34 = [[True, False, True, False], [False, False, True, True], [True, False, False, False]]


def _setitem(x, index, value):
    y = x * 1  # a non-leaf copy we may write into
    y[index] = value
    return y


# prod at zeros: rows with none, one and two zeros; and a tensor with a single zero
WITH_ZEROS = np.array([[0.5, -1.0, 2.0, 1.5], [0.0, 3.0, -0.25, 1.0], [0.0, 0.7, 0.0, -2.0]])
ONE_ZERO = np.array([[0.5, -1.0, 2.0, 1.5], [1.2, 3.0, -0.25, 0.0], [0.9, 0.7, 1.1, -2.0]])
CE_T = V([1, -100, 3, 0], "int")

CASES = [
    # unary math
    Case("exp", lambda x: x.exp(), jnp.exp, (T(3, 4),), double=True),
    Case("log", lambda x: x.log(), jnp.log, (P(3, 4),)),
    Case("sin", acg.sin, jnp.sin, (T(3, 4),)),
    Case("cos", lambda x: x.cos(), jnp.cos, (T(3, 4),)),
    Case("tan", lambda x: x.tan(), jnp.tan, (U(3, 4),)),
    Case("tanh", lambda x: x.tanh(), jnp.tanh, (T(3, 4),)),
    Case("sigmoid", lambda x: x.sigmoid(), jax.nn.sigmoid, (T(3, 4),)),
    Case("sqrt", lambda x: x.sqrt(), jnp.sqrt, (P(3, 4),)),
    Case("rsqrt", lambda x: x.rsqrt(), jax.lax.rsqrt, (P(3, 4),)),
    Case("reciprocal", lambda x: x.reciprocal(), jnp.reciprocal, (P(3, 4),)),
    Case("log1p", lambda x: x.log1p(), jnp.log1p, (U(3, 4),)),
    Case("expm1", lambda x: x.expm1(), jnp.expm1, (T(3, 4),)),
    Case("erf", lambda x: x.erf(), jax.scipy.special.erf, (T(3, 4),)),
    Case("neg", lambda x: -x, jnp.negative, (T(3, 4),)),
    Case("abs", lambda x: abs(x), jnp.abs, (T(3, 4),)),
    Case("square", lambda x: x.square(), jnp.square, (T(3, 4),)),
    Case("relu", lambda x: x.relu(), jax.nn.relu, (T(3, 4),)),
    Case("sign", lambda x: x.sign() * x, lambda x: jnp.sign(x) * x, (T(3, 4),)),
    Case("floor", lambda x: x.floor() + x, lambda x: jnp.floor(x) + x, (T(3, 4),)),
    Case("ceil_round_trunc", lambda x: x.ceil() + x.round() + x.trunc(),
         lambda x: jnp.ceil(x) + jnp.round(x) + jnp.trunc(x), (T(3, 4),)),
    Case("exp_of_int", lambda x: x.exp(), lambda x: jnp.exp(x.astype(jnp.float32)),
         (I(5, hi=4),), grad=False),
    # binary arithmetic, broadcasting, scalars on either side
    Case("add_broadcast", lambda x, y: x + y, jnp.add, (T(3, 4), T(4))),
    Case("add_alpha", lambda x, y: acg.add(x, y, alpha=-2.5), lambda x, y: x - 2.5 * y,
         (T(3, 1), T(1, 4))),
    Case("add_scalar", lambda x: x + 1.5, lambda x: x + 1.5, (T(3, 4),)),
    Case("radd", lambda x: 2 + x, lambda x: 2 + x, (T(3, 4),)),
    Case("sub_broadcast", lambda x, y: x - y, jnp.subtract, (T(2, 3, 4), T(3, 1))),
    Case("rsub", lambda x: 1 - x, lambda x: 1 - x, (T(3, 4),)),
    Case("sub_alpha", lambda x, y: acg.sub(x, y, alpha=3), lambda x, y: x - 3 * y, (T(4), T(4))),
    Case("mul_broadcast", lambda x, y: x * y, jnp.multiply, (T(3, 1), T(1, 4)), double=True),
    Case("rmul", lambda x: 3 * x, lambda x: 3 * x, (T(3, 4),)),
    Case("div", lambda x, y: x / y, jnp.divide, (T(3, 4), P(4)), double=True),
    Case("rdiv", lambda x: 2 / x, lambda x: 2 / x, (P(3, 4),)),
    Case("div_ints", lambda x, y: x / (y + 1), lambda x, y: (x / (y + 1)).astype(jnp.float32),
         (I(3, hi=9), I(3, hi=4)), grad=False),
    Case("remainder", lambda x, y: x % y, jnp.remainder, (P(3, 4), V([0.7, 0.9, 1.1, 1.3]))),
    Case("floor_divide", lambda x, y: x // y, jnp.floor_divide, (T(3, 4), P(4)), grad=False),
    Case("maximum", acg.maximum, jnp.maximum, (T(3, 4), T(4))),
    Case("minimum", acg.minimum, jnp.minimum, (T(3, 1), T(3, 4))),
    Case("maximum_scalar", lambda x: acg.maximum(x, 0.3), lambda x: jnp.maximum(x, 0.3),
         (T(3, 4),)),
    Case("pow_int", lambda x: x ** 3, lambda x: x ** 3, (T(3, 4),), double=True),
    Case("pow_int_neg", lambda x: x ** -2, lambda x: x ** -2.0, (P(3, 4),)),
    Case("pow_zero", lambda x: x.pow(0) + x, lambda x: x ** 0 + x, (T(3, 4),)),
    Case("pow_float", lambda x: x ** 2.5, lambda x: x ** 2.5, (P(3, 4),)),
    Case("pow_tensor", lambda x, y: x ** y, jnp.power, (P(3, 4), T(4)), double=True),
    Case("rpow", lambda x: 2.0 ** x, lambda x: 2.0 ** x, (T(3, 4),)),
    Case("where", lambda c, x, y: acg.where(c, x, y), jnp.where, (B(3, 4), T(3, 4), T(4)),
         double=True),
    Case("where_scalar", lambda c, x: acg.where(c, x, 0.0), lambda c, x: jnp.where(c, x, 0.0),
         (B(3, 4), T(3, 4))),
    Case("where_method", lambda c, x, y: x.where(c, y), lambda c, x, y: jnp.where(c, x, y),
         (B(3, 1), T(3, 4), T(3, 4))),
    Case("clamp", lambda x: x.clamp(-0.5, 0.7), lambda x: jnp.clip(x, -0.5, 0.7), (T(3, 4),)),
    Case("clamp_min", lambda x: x.clamp(min=0.1), lambda x: jnp.maximum(x, 0.1), (T(3, 4),)),
    Case("clamp_tensor", lambda x, lo, hi: acg.clamp(x, lo, hi),
         lambda x, lo, hi: jnp.minimum(jnp.maximum(x, lo), hi),
         (T(3, 4), T(4, lo=-1, hi=-0.2), T(3, 1, lo=0.2, hi=1))),
    Case("compare", lambda x, y: (x < y) & (x >= -1) | ~(x != y),
         lambda x, y: (x < y) & (x >= -1) | ~(x != y), (T(3, 4), T(4)), grad=False),
    Case("eq_scalar", lambda x: (x == 1) | (x > 1), lambda x: (x == 1) | (x > 1),
         (I(3, 4, hi=3),), grad=False),
    Case("logical", lambda a, b: acg.logical_xor(a, b).logical_not(),
         lambda a, b: ~jnp.logical_xor(a, b), (B(3, 4), B(4)), grad=False),
    Case("int_ops", lambda a, b: (a * 2 + b) // 3 - (a % 2),
         lambda a, b: (a * 2 + b) // 3 - (a % 2), (I(3, 4, hi=9), I(4, hi=9)), grad=False),
    # reductions
    Case("sum", lambda x: x.sum(), jnp.sum, (T(3, 4),)),
    Case("sum_dim", lambda x: x.sum(1), lambda x: x.sum(1), (T(3, 4),)),
    Case("sum_dims_keepdim", lambda x: acg.sum(x, (0, -1), keepdim=True),
         lambda x: x.sum((0, 2), keepdims=True), (T(2, 3, 4),)),
    Case("sum_bool", lambda m: m.sum(0), lambda m: m.sum(0), (B(3, 4),), grad=False),
    Case("mean", lambda x: x.mean(), jnp.mean, (T(3, 4),)),
    Case("mean_dim", lambda x: x.mean(dim=-2, keepdim=True),
         lambda x: x.mean(-2, keepdims=True), (T(2, 3, 4),)),
    Case("prod", lambda x: x.prod(), jnp.prod, (T(3, 4, lo=0.5, hi=1.5),)),
    Case("prod_dim_with_zero", lambda x: x.prod(1), lambda x: x.prod(1), (V(WITH_ZEROS),)),
    Case("prod_all_with_zero", lambda x: x.prod(), jnp.prod, (V(ONE_ZERO),)),
    Case("cumsum", lambda x: x.cumsum(1), lambda x: jnp.cumsum(x, 1), (T(3, 4),)),
    Case("amax", lambda x: x.amax(1), lambda x: x.max(1), (T(3, 4),)),
    Case("amin_keepdim", lambda x: acg.amin(x, (0, 1), keepdim=True),
         lambda x: x.min((0, 1), keepdims=True), (T(2, 3, 4),)),
    Case("max_all", lambda x: x.max(), jnp.max, (T(3, 4),)),
    Case("min_all", lambda x: acg.min(x), jnp.min, (T(3, 4),)),
    Case("max_dim", lambda x: tuple(x.max(1)), lambda x: (x.max(1), x.argmax(1)), (T(3, 4),)),
    Case("min_dim_keepdim", lambda x: tuple(acg.min(x, 0, keepdim=True)),
         lambda x: (x.min(0, keepdims=True), x.argmin(0, keepdims=True)), (T(3, 4),)),
    Case("argmax", lambda x: x.argmax(), jnp.argmax, (T(3, 4),), grad=False),
    Case("argmin_dim", lambda x: x.argmin(1, keepdim=True),
         lambda x: jnp.argmin(x, 1, keepdims=True), (T(3, 4),), grad=False),
    Case("var", lambda x: x.var(), lambda x: jnp.var(x, ddof=1), (T(3, 4),), double=True),
    Case("var_correction", lambda x: acg.var(x, (0, 1), correction=0, keepdim=True),
         lambda x: jnp.var(x, (0, 1), keepdims=True), (T(2, 3, 4),)),
    Case("std", lambda x: x.std(0), lambda x: jnp.std(x, 0, ddof=1), (T(3, 4),)),
    Case("var_mean", lambda x: acg.var_mean(x, 1), lambda x: (jnp.var(x, 1, ddof=1),
                                                              x.mean(1)), (T(3, 4),)),
    Case("logsumexp", lambda x: x.logsumexp(1), lambda x: jax.nn.logsumexp(x, 1), (T(3, 4),),
         double=True),
    Case("norm", lambda x: x.norm(), jnp.linalg.norm, (T(3, 4),)),
    Case("all_any", lambda m: m.all(1) | m.any(), lambda m: m.all(1) | m.any(), (B(3, 4),),
         grad=False),
    # shape
    Case("reshape", lambda x: x.reshape(2, -1), lambda x: x.reshape(2, -1), (T(3, 4),)),
    Case("view", lambda x: x.view((4, 3)), lambda x: x.reshape(4, 3), (T(3, 4),)),
    Case("flatten", lambda x: x.flatten(1), lambda x: x.reshape(2, 12), (T(2, 3, 4),)),
    Case("unflatten", lambda x: x.unflatten(1, (2, 2)), lambda x: x.reshape(3, 2, 2),
         (T(3, 4),)),
    Case("transpose", lambda x: x.transpose(0, -1), lambda x: jnp.swapaxes(x, 0, 2),
         (T(2, 3, 4),)),
    Case("permute", lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1),
         (T(2, 3, 4),)),
    Case("T_mT", lambda x, y: x.T + y.mT, lambda x, y: x.T + jnp.swapaxes(y, -1, -2),
         (T(3, 4), T(3, 4))),
    Case("unsqueeze_squeeze", lambda x: x.unsqueeze(1).unsqueeze(-1).squeeze(1),
         lambda x: x[:, None, :, None].squeeze(1), (T(3, 4),)),
    Case("squeeze_all", lambda x: x.squeeze(), jnp.squeeze, (T(1, 3, 1),)),
    Case("expand", lambda x: x.expand(2, 3, -1), lambda x: jnp.broadcast_to(x, (2, 3, 4)),
         (T(1, 4),)),
    Case("expand_as", lambda x, y: x.expand_as(y) * y, lambda x, y: x * y, (T(3, 1), T(3, 4))),
    Case("sum_to_size", lambda x: x.sum_to_size(3, 1), lambda x: x.sum(1, keepdims=True),
         (T(3, 4),)),
    Case("repeat", lambda x: x.repeat(2, 1, 3), lambda x: jnp.tile(x, (2, 1, 3)), (T(3, 4),)),
    Case("flip", lambda x: x.flip(1), lambda x: jnp.flip(x, 1), (T(3, 4),)),
    Case("cat", lambda x, y: acg.cat([x, y], 1), lambda x, y: jnp.concatenate([x, y], 1),
         (T(3, 2), T(3, 4))),
    Case("cat_promotes", lambda x, y: acg.cat([x, y]), lambda x, y: jnp.concatenate(
        [x, y.astype(x.dtype)]), (T(2, 3), I(1, 3, hi=5))),
    Case("stack", lambda x, y: acg.stack([x, y], -1), lambda x, y: jnp.stack([x, y], -1),
         (T(3, 4), T(3, 4))),
    Case("split", lambda x: x.split(3, 1), lambda x: (x[:, :3], x[:, 3:]), (T(3, 4),)),
    Case("split_sizes", lambda x: acg.split(x, [1, 2], 0), lambda x: (x[:1], x[1:]),
         (T(3, 4),)),
    Case("chunk", lambda x: x.chunk(2, -1), lambda x: (x[:, :2], x[:, 2:]), (T(3, 4),)),
    Case("unbind", lambda x: x.unbind(1), lambda x: tuple(x[:, i] for i in range(3)),
         (T(2, 3),)),
    Case("narrow", lambda x: x.narrow(1, 1, 2), lambda x: x[:, 1:3], (T(3, 4),)),
    Case("clone_contiguous", lambda x: x.clone().contiguous() * 2, lambda x: x * 2, (T(3, 4),)),
    # indexing
    Case("index_int", lambda x: x[1], lambda x: x[1], (T(3, 4),)),
    Case("index_slices", lambda x: x[:, 1:3, ::2], lambda x: x[:, 1:3, ::2], (T(2, 3, 4),)),
    Case("index_neg_slice", lambda x: x[-2:, :-1], lambda x: x[-2:, :-1], (T(3, 4),)),
    Case("index_none_ellipsis", lambda x: x[..., None, 1], lambda x: x[..., None, 1],
         (T(2, 3, 4),)),
    Case("index_tensor", lambda x, i: x[i], lambda x, i: x[i], (T(3, 4), I(5, hi=3)),
         double=True),
    Case("index_list_cols", lambda x: x[:, [0, 2, 2]], lambda x: x[:, jnp.array([0, 2, 2])],
         (T(3, 4),)),
    Case("index_pairs", lambda x, i, j: x[i, 1:, j], lambda x, i, j: x[i, 1:, j],
         (T(3, 4, 5), I(2, hi=3), I(3, 1, hi=5))),
    Case("index_int_then_tensor", lambda x, i: x[1, i], lambda x, i: x[1, i],
         (T(3, 4), I(2, 2, hi=4))),
    Case("index_mask", lambda x, m: x[m], lambda x, m: x[m], (T(3, 4), B(3, 4)), fake=False),
    Case("index_select", lambda x, i: x.index_select(1, i), lambda x, i: x[:, i],
         (T(3, 4), I(5, hi=4))),
    Case("gather", lambda x, i: x.gather(1, i), lambda x, i: jnp.take_along_axis(x, i, 1),
         (T(3, 4), I(3, 2, hi=4))),
    Case("scatter_add", lambda x, i, s: x.scatter_add(1, i, s),
         lambda x, i, s: x.at[jnp.arange(3)[:, None], i].add(s),
         (T(3, 4), I(3, 2, hi=4), T(3, 2))),
    Case("masked_fill", lambda x, m: x.masked_fill(m, -1.0),
         lambda x, m: jnp.where(m, -1.0, x), (T(3, 4), B(4))),
    Case("index_put", lambda x, i, v: x.index_put((i,), v),
         lambda x, i, v: x.at[i].set(v), (T(5, 3), V([0, 3], "int"), T(2, 3))),
    Case("index_put_accumulate", lambda x, i, v: x.index_put([None, i], v, accumulate=True),
         lambda x, i, v: x.at[:, i].add(v), (T(2, 5), V([1, 1, 4], "int"), T(3))),
    Case("setitem_int_slice", lambda x, v: _setitem(x, (1, slice(0, 3)), v),
         lambda x, v: x.at[1, 0:3].set(v), (T(3, 4), T(3))),
    Case("setitem_scalar_none", lambda x: _setitem(x, (None, slice(1, None), 2), 5.0),
         lambda x: x.at[1:, 2].set(5.0), (T(3, 4),)),
    Case("setitem_tensor_index", lambda x, i, v: _setitem(x, (slice(None), i), v),
         lambda x, i, v: x.at[:, i].set(v), (T(3, 4), V([3, 0], "int"), T(3, 1))),
    Case("setitem_mask", lambda x, m, v: _setitem(x, m, v), lambda x, m, v: jnp.where(m, v, x),
         (T(3, 4), B(3, 4), T(1))),
    # one value per selected element (DQN's next_values[non_final] = target(...).max(1)[0])
    Case("setitem_mask_values", lambda x, m, v: _setitem(x, m, v),
         lambda x, m, v: x.at[np.asarray(_MASK34)].set(v), (T(3, 4), V(_MASK34, "bool"), T(5)),
         fake=False),
    Case("setitem_step", lambda x, v: _setitem(x, (Ellipsis, slice(None, None, 2)), v),
         lambda x, v: x.at[..., ::2].set(v), (T(3, 5), T(3, 3))),
    # linear algebra
    Case("matmul_2d", lambda a, b: a @ b, jnp.matmul, (T(3, 4), T(4, 5)), double=True),
    Case("matmul_vec_mat", acg.matmul, jnp.matmul, (T(4), T(4, 5))),
    Case("matmul_mat_vec", acg.matmul, jnp.matmul, (T(3, 4), T(4))),
    Case("matmul_dot", acg.matmul, jnp.matmul, (T(4), T(4))),
    Case("matmul_batched_broadcast", acg.matmul, jnp.matmul, (T(2, 1, 3, 4), T(5, 4, 2))),
    Case("mm", acg.mm, jnp.matmul, (T(3, 4), T(4, 5))),
    Case("bmm", acg.bmm, jnp.matmul, (T(2, 3, 4), T(2, 4, 5))),
    Case("dot", acg.dot, jnp.dot, (T(4), T(4))),
    Case("outer", acg.outer, jnp.outer, (T(3), T(4))),
    Case("linear", F.linear, lambda x, w, b: x @ w.T + b, (T(2, 3, 4), T(5, 4), T(5)),
         double=True),
    Case("linear_no_bias", F.linear, lambda x, w: x @ w.T, (T(3, 4), T(5, 4))),
    Case("linear_4d_broadcast_bias", F.linear, lambda x, w, b: x @ w.T + b,
         (T(2, 2, 3, 4), T(5, 4), T(1)), double=True),
    Case("linear_vector_input", F.linear, lambda x, w, b: w @ x + b, (T(4), T(5, 4), T(5))),
    Case("linear_vector_weight", F.linear, lambda x, w: x @ w, (T(2, 3, 4), T(4)), double=True),
    # nn
    Case("softmax", lambda x: F.softmax(x, -1), lambda x: jax.nn.softmax(x, -1), (T(3, 4),),
         double=True),
    Case("softmax_dim0", lambda x: x.softmax(0), lambda x: jax.nn.softmax(x, 0), (T(2, 3, 4),)),
    Case("log_softmax", lambda x: F.log_softmax(x, 1), lambda x: jax.nn.log_softmax(x, 1),
         (T(3, 4),), double=True),
    Case("softmax_large", lambda x: F.softmax(x * 1000, -1),
         lambda x: jax.nn.softmax(x * 1000, -1), (T(2, 3),), grad=False),
    Case("gelu", F.gelu, lambda x: jax.nn.gelu(x, approximate=False), (T(3, 4),), double=True),
    Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
         lambda x: jax.nn.gelu(x, approximate=True), (T(3, 4),),
         double=True),
    Case("silu", F.silu, jax.nn.silu, (T(3, 4),)),
    Case("layer_norm", lambda x, w, b: F.layer_norm(x, 4, w, b),
         lambda x, w, b: _ln_ref(x, (4,), w, b), (T(3, 4), T(4), T(4)), double=True),
    Case("layer_norm_2d_plain", lambda x: F.layer_norm(x, (3, 4), eps=1e-3),
         lambda x: _ln_ref(x, (3, 4), eps=1e-3), (T(2, 3, 4),), double=True),
    Case("rms_norm", lambda x, w: F.rms_norm(x, 4, w, 1e-3), lambda x, w: _rms_ref(x, (4,), w, 1e-3),
         (T(3, 4), T(4)), double=True),
    Case("rms_norm_2d_default_eps", lambda x: F.rms_norm(x, (3, 4)),
         lambda x: _rms_ref(x, (3, 4)), (T(2, 3, 4),)),
    Case("cross_entropy", F.cross_entropy, _ce_ref, (T(4, 5), I(4, hi=5)), double=True),
    Case("cross_entropy_sum_ls", lambda x, t: F.cross_entropy(x, t, reduction="sum",
                                                              label_smoothing=0.2),
         lambda x, t: _ce_ref(x, t, reduction="sum", ls=0.2), (T(4, 5), I(4, hi=5))),
    Case("cross_entropy_ignore_weight", lambda x, t, w: F.cross_entropy(
        x, t, w, label_smoothing=0.1), lambda x, t, w: _ce_ref(x, t, w, ls=0.1),
        (T(4, 5), CE_T, C(5))),
    Case("cross_entropy_none_spatial", lambda x, t: F.cross_entropy(x, t, reduction="none"),
         lambda x, t: _ce_ref(x, t, reduction="none"), (T(2, 3, 4), I(2, 4, hi=3))),
    Case("cross_entropy_unbatched", F.cross_entropy, _ce_ref, (T(4), V(2, "int"))),
    Case("cross_entropy_probs", F.cross_entropy,
         lambda x, p: -(jax.nn.log_softmax(x, 1) * p).sum(1).mean(), (T(3, 4), P(3, 4))),
    Case("nll_loss", lambda x, t: F.nll_loss(x.log_softmax(1), t), _ce_ref, (T(4, 5), I(4, hi=5))),
    Case("mse_loss", F.mse_loss, lambda x, t: ((x - t) ** 2).mean(), (T(3, 4), T(3, 4))),
    Case("mse_loss_sum_broadcast", lambda x, t: F.mse_loss(x, t, reduction="sum"),
         lambda x, t: ((x - t) ** 2).sum(), (T(3, 4), T(4))),
    Case("mse_loss_none", lambda x, t: F.mse_loss(x, t, reduction="none"),
         lambda x, t: (x - t) ** 2, (T(3, 4), T(3, 4))),
    Case("dropout_eval", lambda x: F.dropout(x, 0.5, training=False) * 2, lambda x: x * 2,
         (T(3, 4),)),
] + NN_CASES + TENSOR_CASES + MORE_CASES
CASES += TAILS_CASES  # tails
GRAD_CASES = [c for c in CASES if c.grad]
IDS = [c.name for c in CASES]


# -- the jnp reference: every case in ONE jitted program, compiled in the background -----------
# XLA compiles dominate this suite's time: one large compile costs far less than ~150 small
# ones, and it runs in a thread (XLA releases the GIL) while the tests that need no reference
# (fake tensors, in-place, views, the Python surface: defined first) compile our kernels.
@dataclass
class Reference:
    outs: list  # every output of case.ref, float64 inputs
    cts: list  # cotangents for the float outputs
    grads: list  # vjp of the float outputs at cts, one per float input
    seconds: list  # double cases: gradient of sum(grads * ws) w.r.t. the inputs, then cts
    ws: list  # the weights of that sum


def _put(values: list, where: list, xs: list) -> list:
    out = list(values)
    for i, x in zip(where, xs):
        out[i] = x
    return out


def _jax_fn(case: Case, theirs: list) -> tuple[Callable, list]:
    """The jnp version as a function of the float inputs only, returning float outputs."""
    pos = [i for i, a in enumerate(case.args) if _is_float_arg(a)]

    def f(*floats: Any) -> tuple:
        return tuple(_float_outputs(case.ref(*_put(theirs, pos, floats))))
    return f, [theirs[i] for i in pos]


def _plan(case: Case) -> tuple[list, list, list, list]:
    """(jnp args, float positions, cotangents, double-backward weights) of a case."""
    theirs = _jnp_inputs(case, np.float64)
    pos = [i for i, a in enumerate(case.args) if _is_float_arg(a)]  # the rest: constants
    f, primals = _jax_fn(case, theirs)
    rng = np.random.default_rng(1)
    cts = [rng.standard_normal(o.shape) for o in jax.eval_shape(f, *primals)]
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(p.shape) for p in primals] if case.double else []
    return theirs, pos, cts, ws


def _trace_one(case: Case, plan: tuple, xs: list) -> tuple:
    theirs, pos, cts, ws = plan
    outs = _flat(case.ref(*_put(theirs, pos, xs)))
    if not case.grad:
        return outs, (), ()
    f, _ = _jax_fn(case, theirs)
    n = len(xs)

    def first_order(*p_and_ct: Any) -> Any:
        return jax.vjp(f, *p_and_ct[:n])[1](tuple(p_and_ct[n:]))
    ct_arrays = [jnp.asarray(c) for c in cts]
    grads = first_order(*xs, *ct_arrays)
    if not case.double:
        return outs, grads, ()
    weighted = lambda *a: sum((g * w).sum() for g, w in zip(first_order(*a), ws))  # noqa: E731
    return outs, grads, jax.grad(weighted, argnums=tuple(range(n + len(cts))))(*xs, *ct_arrays)


def _compute_references() -> dict[str, Any]:
    plans = {c.name: _plan(c) for c in CASES}
    failures: dict[str, Exception] = {}

    def run(inputs: dict) -> dict:
        out = {}
        for case in CASES:
            try:
                out[case.name] = _trace_one(case, plans[case.name], inputs[case.name])
            except Exception as e:  # reported by that case's tests only
                failures[case.name] = e
        return out
    inputs = {c.name: [plans[c.name][0][i] for i in plans[c.name][1]] for c in CASES}
    # optimisation level 0: the reference runs once, its compile time is what matters
    options = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
    results = jax.jit(run).lower(inputs).compile(compiler_options=options)(inputs)
    refs: dict[str, Any] = dict(failures)
    for name, (outs, grads, seconds) in results.items():
        refs[name] = Reference(list(outs), plans[name][2], list(grads), list(seconds),
                               plans[name][3])
    return refs


_REFERENCES: dict[str, Any] = {}


def _compute_in_background() -> None:
    try:
        _REFERENCES.update(_compute_references())
    except BaseException as e:  # re-raised by every test that asks for a reference
        _REFERENCES["*"] = e


_THREAD = threading.Thread(target=_compute_in_background, daemon=True)  # a run needing no
_THREAD.start()  # reference does not wait for it


def reference(case: Case) -> Reference:
    _THREAD.join()
    if "*" in _REFERENCES:
        raise _REFERENCES["*"]
    ref = _REFERENCES[case.name]
    if isinstance(ref, Exception):
        raise ref
    return ref


# -- 4. fake tensors: concrete and symbolic sizes -------------------------------------------------
def _fake_run(case: Case, dtype: Any, shape_env: ShapeEnv | None) -> list:
    """The case on fake inputs; with a ShapeEnv every size >= 2 is a symbol, one symbol per
    distinct size (as a batch dimension shared by several inputs would be)."""
    ours = _inputs(case, dtype)
    with FakeTensorMode(shape_env) as mode:
        fakes = [a if not isinstance(a, acg.Tensor) else mode.from_tensor(a) if shape_env is None
                 else mode.from_tensor(a, [shape_env.create_symint(s, f"size{s}") for s in a.shape])
                 for a in ours]
        return _flat(case.fn(*fakes))


FAKE_CASES = [c for c in CASES if c.fake]


@pytest.mark.parametrize("case", FAKE_CASES, ids=[c.name for c in FAKE_CASES])
@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
def test_fake_matches_real(case: Case, symbolic: bool) -> None:
    ours = _inputs(case, np.float64)
    real = _flat(case.fn(*ours))
    fake = _fake_run(case, np.float64, ShapeEnv() if symbolic else None)
    assert len(fake) == len(real)
    for f, r in zip(fake, real):
        assert isinstance(f, FakeTensor)
        assert [hint_int(s) for s in f.shape] == list(r.shape)
        assert f.dtype == r.dtype


@pytest.mark.parametrize("case", FAKE_CASES, ids=[c.name for c in FAKE_CASES])
def test_fake_float32_stays_float32(case: Case) -> None:
    ours = _inputs(case, np.float64)
    real = _flat(case.fn(*ours))  # float64 in: float64 out, except ops that pick float32
    for f, r in zip(_fake_run(case, np.float32, None), real):
        assert f.dtype == (acg.float32 if r.dtype == acg.float64 else r.dtype)


# -- 6. in-place variants --------------------------------------------------------------------------
INPLACE = [  # (name, in-place call, out-of-place call, extra args)
    ("add_", lambda x, y: x.add_(y), lambda x, y: x + y, (T(4),)),
    ("add_alpha_", lambda x, y: x.add_(y, alpha=2), lambda x, y: x + 2 * y, (T(3, 4),)),
    ("sub_", lambda x, y: x.sub_(y), lambda x, y: x - y, (T(3, 1),)),
    ("mul_", lambda x: x.mul_(3.0), lambda x: x * 3.0, ()),
    ("div_", lambda x, y: x.div_(y), lambda x, y: x / y, (P(4),)),
    ("pow_", lambda x: x.pow_(2), lambda x: x ** 2, ()),
    ("clamp_", lambda x: x.clamp_(-0.5, 0.5), lambda x: x.clamp(-0.5, 0.5), ()),
    ("neg_exp_", lambda x: x.neg_().exp_(), lambda x: (-x).exp(), ()),
    ("relu_", lambda x: x.relu_(), lambda x: x.relu(), ()),
    # (x.sigmoid_().tanh_() raises, as in PyTorch: tanh_ overwrites what sigmoid's backward reads)
    ("mul_sigmoid_", lambda x: x.mul_(2.0).sigmoid_(), lambda x: (x * 2.0).sigmoid(), ()),
    ("abs_", lambda x: x.abs_(), lambda x: x.abs(), ()),
    ("zero_", lambda x: x.zero_(), lambda x: x * 0, ()),
    ("fill_", lambda x: x.fill_(2.5), lambda x: x * 0 + 2.5, ()),
    ("copy_", lambda x, y: x.copy_(y), lambda x, y: y.expand(3, 4) * 1, (T(4),)),
    ("masked_fill_", lambda x, m: x.masked_fill_(m, 0.0), lambda x, m: x.masked_fill(m, 0.0),
     (B(3, 4),)),
    ("index_put_", lambda x, v: x.index_put_([acg.tensor([2, 0])], v),
     lambda x, v: x.index_put([acg.tensor([2, 0])], v), (T(2, 4),)),
    ("iadd", lambda x, y: x.__iadd__(y), lambda x, y: x + y, (T(3, 4),)),
    ("imul_itruediv", lambda x: x.__imul__(2).__itruediv__(4), lambda x: x * 2 / 4, ()),
]


@pytest.mark.parametrize("name,inplace,outplace,extra", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_matches_out_of_place(name: str, inplace: Callable, outplace: Callable,
                                      extra: tuple) -> None:
    case = Case(name, None, None, (T(3, 4),) + extra)
    x, *rest = _inputs(case, np.float64)
    want = outplace(x, *rest)
    y = x.clone()
    before = y._version
    out = inplace(y, *rest)
    assert out is y
    assert y._version > before
    np.testing.assert_allclose(np.asarray(y), np.asarray(want), rtol=1e-12)


@pytest.mark.parametrize("name,inplace,outplace,extra", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_gradient_matches_out_of_place(name: str, inplace: Callable, outplace: Callable,
                                               extra: tuple) -> None:
    case = Case(name, None, None, (T(3, 4),) + extra)

    def grads(fn: Callable) -> list:
        x, *rest = _inputs(case, np.float64, requires_grad=True)
        leaves = [x] + [r for r in rest if isinstance(r, acg.Tensor) and r.requires_grad]
        y = fn(x * 1, *rest)  # in place on a non-leaf
        w = acg.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
        gs = acg.autograd.grad((y * w).sum(), leaves, allow_unused=True)
        return [np.zeros(t.shape) if g is None else np.asarray(g) for t, g in zip(leaves, gs)]
    for got, want in zip(grads(inplace), grads(outplace)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_setitem_bumps_version_and_keeps_value_gradient() -> None:
    v = acg.tensor([1.0, 2.0], requires_grad=True)
    x = acg.zeros(3, 2)
    before = x._version
    x[1] = v * 3
    assert x._version == before + 1
    assert x.tolist() == [[0.0, 0.0], [3.0, 6.0], [0.0, 0.0]]
    x.sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]


# -- views: an in-place op on a view writes through to its base ------------------------------------
VIEWS = [  # (name, view on acg tensors, the same view on numpy arrays)
    ("slice", lambda u: u[1:], lambda a: a[1:]),
    ("select_column", lambda u: u[:, 2], lambda a: a[:, 2]),
    ("t_then_slice", lambda u: u.t()[1:3], lambda a: a.T[1:3]),
    ("view_flat_step", lambda u: u.view(-1)[::3], lambda a: a.reshape(-1)[::3]),
    ("unsqueeze_select", lambda u: u.unsqueeze(0)[0, 1], lambda a: a[None][0, 1]),
    ("permute_narrow", lambda u: u.permute(1, 0).narrow(0, 1, 2), lambda a: a.T[1:3]),
    ("split_piece", lambda u: u.split(2, 1)[1], lambda a: a[:, 2:4]),
    ("chunk_piece", lambda u: u.chunk(3, 0)[2], lambda a: a[2:3]),
    ("unbind_piece", lambda u: u.unbind(1)[3], lambda a: a[:, 3]),
    ("flatten_slice", lambda u: u.flatten()[2:5], lambda a: a.reshape(-1)[2:5]),
]


@pytest.mark.parametrize("name,view,np_view", VIEWS, ids=[v[0] for v in VIEWS])
def test_inplace_on_view_writes_through_to_base(name: str, view: Callable,
                                                 np_view: Callable) -> None:
    start = np.arange(12.0).reshape(3, 4) - 5
    x = acg.tensor(start, requires_grad=True)
    u = x * 1
    before = u._version
    view(u).mul_(10.0)
    want, covered = start.copy(), np.zeros((3, 4))
    np_view(want)[...] *= 10
    np_view(covered)[...] = 1
    np.testing.assert_array_equal(u.detach().numpy(), want)
    assert u._version > before  # saved-tensor checks see the write
    u.sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), 1 + 9 * covered)


def test_writes_through_views_of_views() -> None:
    w = acg.zeros(2, 3)
    w.t()[0].fill_(5.0)  # a view of a view
    w.view(-1)[4] = 7.0  # __setitem__ on a view
    assert w.tolist() == [[5.0, 0.0, 0.0], [5.0, 7.0, 0.0]]


# -- 1. forward ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_jnp(case: Case) -> None:
    ours = _inputs(case, np.float64)
    got, want = _flat(case.fn(*ours)), reference(case).outs
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, acg.Tensor)
        assert tuple(g.shape) == tuple(w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)  # PyTorch promotion, no 32/64-bit leaks
        # float32 results (ops on ints) may differ from jnp's by an ulp: eager runs numpy
        tol = (1e-6, 1e-6) if g.dtype == acg.float32 else (1e-10, 1e-12)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_host_tier_matches_xla(case: Case, dtype: Any) -> None:
    """Eager CPU ops run on numpy until a shape earns an XLA program (kernels/_xp.py): the
    two tiers give the same dtypes, shapes and values (to the dtype's rounding)."""
    ours = _inputs(case, dtype)
    with _xp.forced("host"):
        acg.manual_seed(0)  # random cases draw the same numbers in both tiers
        host = _flat(case.fn(*ours))
    with _xp.forced("xla"):
        acg.manual_seed(0)
        xla = _flat(case.fn(*ours))
    assert len(host) == len(xla)
    for h, x in zip(host, xla):
        assert (tuple(h.shape), h.dtype) == (tuple(x.shape), x.dtype)
        tol = 1e-12 if h.dtype == acg.float64 else 2e-6  # (ints give float32 results)
        np.testing.assert_allclose(np.asarray(h), np.asarray(x), rtol=tol, atol=tol)


# float32 stays float32 (jax_enable_x64 is on: a missing dtype would silently give float64)
F32_SUBSET = ["exp_of_int", "div_ints", "pow_float", "where_scalar", "mean_dim", "var",
              "softmax", "layer_norm", "cross_entropy", "setitem_scalar_none"]


@pytest.mark.parametrize("name", F32_SUBSET)
def test_float32_in_float32_out(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    ours = _inputs(case, np.float32)
    outs = _flat(case.fn(*ours))
    want = reference(case).outs
    for o, w in zip(outs, want):
        expected = acg.float32 if jnp.issubdtype(w.dtype, jnp.floating) else w.dtype
        assert o.dtype == expected
        np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=2e-5, atol=2e-6)


# -- 2. backward vs jax.vjp; 3. vs central differences --------------------------------------------
def _our_grads(case: Case, create_graph: bool = False) -> tuple[list, list, list]:
    """(float64 leaves, their grads for the reference cotangents, the cotangent tensors);
    with create_graph the cotangents require grad too (double backward differentiates both)."""
    ours = _inputs(case, np.float64, requires_grad=True)
    leaves = [t for t in ours if isinstance(t, acg.Tensor) and t.requires_grad]
    outs = _float_outputs(case.fn(*ours))
    cts = [acg.tensor(c, requires_grad=create_graph) for c in reference(case).cts]
    grads = acg.autograd.grad(outs, leaves, cts, allow_unused=True, create_graph=create_graph)
    return leaves, list(grads), cts


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_backward_matches_jax_vjp(case: Case) -> None:
    leaves, grads, _ = _our_grads(case)
    want = reference(case).grads
    assert len(want) == len(leaves)
    for leaf, g, w in zip(leaves, grads, want):
        got = np.zeros(leaf.shape) if g is None else np.asarray(g)
        assert g is None or g.dtype == acg.float64
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_backward_matches_numerical(case: Case) -> None:
    leaves, grads, _ = _our_grads(case)
    cts = reference(case).cts
    rng = np.random.default_rng(2)
    dirs = [rng.standard_normal(t.shape) for t in leaves]
    analytic = sum(float((np.asarray(g) * d).sum()) for g, d in zip(grads, dirs)
                   if g is not None)
    eps = 1e-6

    def objective(sign: float) -> float:
        ours = _inputs(case, np.float64)
        k = 0
        for i, a in enumerate(case.args):
            if _is_float_arg(a):
                ours[i] = acg.tensor(np.asarray(ours[i]) + sign * eps * dirs[k])
                k += 1
        outs = _float_outputs(case.fn(*ours))
        return sum(float((np.asarray(o) * c).sum()) for o, c in zip(outs, cts))
    numeric = (objective(1.0) - objective(-1.0)) / (2 * eps)
    assert abs(numeric - analytic) <= 1e-6 * (1 + abs(analytic)), (numeric, analytic)


# -- 5. double backward --------------------------------------------------------------------------
DOUBLE = [c for c in CASES if c.double]


@pytest.mark.parametrize("case", DOUBLE, ids=[c.name for c in DOUBLE])
def test_double_backward_matches_jax(case: Case) -> None:
    leaves, grads, cts = _our_grads(case, create_graph=True)
    ref = reference(case)
    total = sum((g * acg.tensor(w)).sum() for g, w in zip(grads, ref.ws) if g is not None)
    seconds = acg.autograd.grad(total, leaves + cts, allow_unused=True)
    assert len(seconds) == len(ref.seconds)
    for leaf, g, w in zip(leaves + cts, seconds, ref.seconds):
        got = np.zeros(leaf.shape) if g is None else np.asarray(g)
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-8, atol=1e-9)
