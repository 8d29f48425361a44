"""Random autograd programs as data, and two interpreters for them.

A :class:`Program` is plain data: leaf shapes, a list of :class:`Op` records
(each names an entry of :data:`OPS` and the values it reads), hooks, and the
loss coefficients. :func:`programs` is the hypothesis strategy that draws one,
tracking shapes so every op is well formed. :func:`run_acg` interprets a
program with ``acg`` tensors (eager or compiled, hooks and all);
:func:`oracle` interprets the same data with ``jax.numpy`` and differentiates
it with ``jax.grad``, so the oracle shares nothing with our kernels or engine.

Hooks in the oracle: a tensor hook returning ``g * c`` and a node hook scaling
its gradients by ``c`` are linear, so each becomes a ``custom_vjp`` that scales
the cotangent at the value's position; zero "probe" inputs added before and
after a value's tensor hooks give the gradient retain_grad and a tensor hook see.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import compiled_autograd as ca

Shape = tuple[int, ...]
# few distinct shapes (broadcast partners among them): XLA compiles once per shape, and a
# small set keeps jax's per-primitive compile caches warm across examples
LEAF_SHAPES: list[Shape] = [(3,), (3, 4), (1, 4), (3, 1), (4,), (), (2, 2, 3), (4, 5), (1,)]
SCALARS = [2.0, -0.5, 0.75, 3, -1.5, 0.25, -2]  # ints too: both are lifted
HOOK_SCALES = [2.0, -1.0, 0.5, 3.0]
MAX_NUMEL = 40


# -- custom autograd Functions in the menu -------------------------------------------------

class Cube(acg.autograd.Function):
    """k * x**3 with a float on ctx (lifted under compile)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * x * (3.0 * ctx.k), None


class MulAdd(acg.autograd.Function):
    """x * y + alpha * x: two tensor inputs, both saved."""

    @staticmethod
    def forward(ctx, x, y, alpha):
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return x * y + x * alpha

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (y + ctx.alpha), g * x, None


# -- shapes -------------------------------------------------------------------------------

def broadcast(a: Shape, b: Shape) -> Shape | None:
    """The broadcast shape of ``a`` and ``b`` (numpy rules), or None."""
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def numel(shape: Shape) -> int:
    return math.prod(shape)


def _factorizations(n: int) -> list[Shape]:
    """Shapes of rank 1-3 with ``n`` elements."""
    divs = [d for d in range(1, n + 1) if n % d == 0]
    out = [(n,)] + [(a, n // a) for a in divs]
    out += [(a, b, n // (a * b)) for a in divs for b in divs if n % (a * b) == 0]
    return out


# -- the op menu ---------------------------------------------------------------------------

class OpSpec(NamedTuple):
    gen: Callable  # (draw, shapes) -> (args, params, out_shape) | None
    acg: Callable  # (values, params) -> acg.Tensor
    jnp: Callable  # (arrays, params) -> jax array


def _pick(draw: Any, shapes: list[Shape], ok: Callable[[Shape], bool] = lambda s: True
          ) -> int | None:
    """A value index whose shape passes ``ok`` (later values more likely)."""
    cands = [i for i, s in enumerate(shapes) if ok(s)]
    return cands[-1 - draw(st.integers(0, len(cands) - 1))] if cands else None


def unary(acg_fn: Callable, jnp_fn: Callable, out: Callable[[Shape], Shape] = lambda s: s
          ) -> OpSpec:
    def gen(draw, shapes):
        i = _pick(draw, shapes)
        return (i,), (), out(shapes[i])
    return OpSpec(gen, lambda v, p: acg_fn(v[0]), lambda v, p: jnp_fn(v[0]))


def scalar_op(acg_fn: Callable, jnp_fn: Callable, scalars: list = SCALARS) -> OpSpec:
    """``x op s`` or ``s op x`` with a Python scalar."""
    def gen(draw, shapes):
        i = _pick(draw, shapes)
        return (i,), (draw(st.sampled_from(scalars)), draw(st.booleans())), shapes[i]
    return OpSpec(gen, lambda v, p: acg_fn(v[0], *p), lambda v, p: jnp_fn(v[0], *p))


def binary(acg_fn: Callable, jnp_fn: Callable) -> OpSpec:
    """A broadcasting op of two values (possibly the same value twice)."""
    def gen(draw, shapes):
        i = _pick(draw, shapes)
        j = _pick(draw, shapes, lambda s: broadcast(shapes[i], s) is not None)
        out = broadcast(shapes[i], shapes[j])
        return ((i, j), (), out) if numel(out) <= MAX_NUMEL else None
    return OpSpec(gen, lambda v, p: acg_fn(v[0], v[1]), lambda v, p: jnp_fn(v[0], v[1]))


def _dim_gen(need: Callable[[Shape, int], bool] = lambda s, d: True, keep: bool = True):
    def gen(draw, shapes):
        i = _pick(draw, shapes, lambda s: any(need(s, d) for d in range(len(s))))
        if i is None:
            return None
        s = shapes[i]
        d = draw(st.sampled_from([d for d in range(len(s)) if need(s, d)]))
        keepdim = draw(st.booleans()) if keep else False
        out = s[:d] + ((1,) if keepdim else ()) + s[d + 1:]
        return (i,), (d - len(s) if draw(st.booleans()) else d, keepdim), out
    return gen


def _reshape_gen(draw, shapes):
    i = _pick(draw, shapes)
    new = draw(st.sampled_from(_factorizations(numel(shapes[i]))))
    return (i,), (new,), new


def _transpose_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 2)
    if i is None:
        return None
    s = shapes[i]
    a, b = draw(st.sampled_from(list(itertools.combinations(range(len(s)), 2))))
    out = list(s)
    out[a], out[b] = out[b], out[a]
    return (i,), (a, b), tuple(out)


def _permute_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 2)
    if i is None:
        return None
    perm = draw(st.permutations(range(len(shapes[i]))))
    return (i,), (tuple(perm),), tuple(shapes[i][p] for p in perm)


def _unsqueeze_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) <= 2)
    if i is None:
        return None
    d = draw(st.integers(0, len(shapes[i])))
    return (i,), (d,), shapes[i][:d] + (1,) + shapes[i][d:]


def _expand_gen(draw, shapes):
    """Grow size-1 dims, or add a leading dim."""
    i = _pick(draw, shapes, lambda s: len(s) <= 2)
    if i is None:
        return None
    s, n = shapes[i], draw(st.integers(2, 3))
    ones = [d for d, x in enumerate(s) if x == 1]
    out = tuple(n if d in ones else x for d, x in enumerate(s)) if ones else (n,) + s
    return ((i,), (out,), out) if numel(out) <= MAX_NUMEL else None


def _index_gen(draw, shapes):
    """x[i], x[a:b:c] on one dim, x[..., k], or x[[i, j, i]] (an index with repeats)."""
    i = _pick(draw, shapes, lambda s: len(s) >= 1)
    if i is None:
        return None
    s = shapes[i]
    kind = draw(st.sampled_from(["int", "slice", "ellipsis", "list"]))
    if kind == "int":
        k = draw(st.integers(-s[0], s[0] - 1))
        return (i,), (kind, k), s[1:]
    if kind == "ellipsis":
        k = draw(st.integers(-s[-1], s[-1] - 1))
        return (i,), (kind, k), s[:-1]
    if kind == "list":
        idx = tuple(draw(st.lists(st.integers(0, s[0] - 1), min_size=1, max_size=4)))
        return (i,), (kind, idx), (len(idx),) + s[1:]
    d = draw(st.integers(0, len(s) - 1))
    a = draw(st.integers(0, s[d] - 1))
    b = draw(st.integers(a + 1, s[d]))
    step = draw(st.sampled_from([1, 1, 2]))
    out = s[:d] + (len(range(a, b, step)),) + s[d + 1:]
    a = a - s[d] if draw(st.booleans()) else a  # the same bounds counted from the end
    b = b - s[d] if b < s[d] and draw(st.booleans()) else b
    return (i,), (kind, (d, a, b, step)), out


def _select_gen(draw, shapes):
    """x.select(d, k) or x.narrow(d, start, length); k and start may count from the end."""
    i = _pick(draw, shapes, lambda s: len(s) >= 1)
    if i is None:
        return None
    s = shapes[i]
    d = draw(st.integers(0, len(s) - 1))
    start = draw(st.integers(-s[d], s[d] - 1))
    if draw(st.booleans()):
        return (i,), ("select", d, start), s[:d] + s[d + 1:]
    length = draw(st.integers(1, s[d] - start % s[d]))
    return (i,), ("narrow", d, start, length), s[:d] + (length,) + s[d + 1:]


def _select_acg(v, p):
    return v[0].select(p[1], p[2]) if p[0] == "select" else v[0].narrow(*p[1:])


def _select_jnp(v, p):
    d, start = p[1], p[2]
    if p[0] == "select":
        return v[0][(slice(None),) * d + (start,)]
    begin = start % v[0].shape[d]
    return v[0][(slice(None),) * d + (slice(begin, begin + p[3]),)]


def _index_key(params: tuple, as_tensor: Callable) -> Any:
    kind, arg = params
    if kind == "int":
        return arg
    if kind == "ellipsis":
        return (Ellipsis, arg)
    if kind == "list":
        return as_tensor(list(arg))
    d, a, b, step = arg
    return (slice(None),) * d + (slice(a, b, step),)


def _matmul_gen(draw, shapes):
    """x @ y for 1-d/2-d operands with matching inner sizes (x @ x.T if none match)."""
    i = _pick(draw, shapes, lambda s: len(s) in (1, 2) and numel(s) > 0)
    if i is None:
        return None
    s = shapes[i]
    j = _pick(draw, shapes, lambda t: len(t) in (1, 2) and t[0] == s[-1])
    if j is None:
        return ((i,), ("self_t",), (s[0], s[0]) if len(s) == 2 else ())
    t = shapes[j]
    out = s[:-1] + t[1:]
    return ((i, j), ("pair",), out) if numel(out) <= MAX_NUMEL else None


def _linear_gen(draw, shapes):
    """F.linear(x, w[, b]): w a 2-d value whose last size matches x's, the bias (when
    drawn) a 1-d value of w's first size."""
    i = _pick(draw, shapes, lambda s: len(s) >= 1 and numel(s) > 0)
    if i is None:
        return None
    s = shapes[i]
    j = _pick(draw, shapes, lambda t: len(t) == 2 and t[1] == s[-1])
    if j is None:
        return None
    k = _pick(draw, shapes, lambda t: t == (shapes[j][0],)) if draw(st.booleans()) else None
    out = s[:-1] + (shapes[j][0],)
    args = (i, j) if k is None else (i, j, k)
    return (args, (), out) if numel(out) <= MAX_NUMEL else None


def _matmul_acg(v, p):
    if p[0] == "self_t":
        return v[0] @ (v[0].transpose(0, 1) if v[0].ndim == 2 else v[0])
    return v[0] @ v[1]


def _matmul_jnp(v, p):
    if p[0] == "self_t":
        return v[0] @ (v[0].T if v[0].ndim == 2 else v[0])
    return v[0] @ v[1]


def _join_gen(stack: bool):
    def gen(draw, shapes):
        i = _pick(draw, shapes, lambda s: len(s) >= 1 or stack)
        if i is None:
            return None
        s = shapes[i]
        d = draw(st.integers(0, len(s) if stack else len(s) - 1))
        same = (lambda t: t == s) if stack else \
            (lambda t: len(t) == len(s) and t[:d] + t[d + 1:] == s[:d] + s[d + 1:])
        j = _pick(draw, shapes, same)
        out = s[:d] + (2,) + s[d:] if stack else s[:d] + (s[d] + shapes[j][d],) + s[d + 1:]
        return ((i, j), (d,), out) if numel(out) <= MAX_NUMEL else None
    return gen


def _inplace_gen(draw, shapes):
    """u = x.clone(); u.<op>_(scalar or y), y broadcasting to x's shape."""
    i = _pick(draw, shapes)
    op = draw(st.sampled_from(["mul_", "add_", "sub_", "div_"]))
    if op != "div_" and draw(st.booleans()):
        j = _pick(draw, shapes, lambda t: broadcast(shapes[i], t) == shapes[i])
        if j is not None:
            return (i, j), (op, None), shapes[i]
    return (i,), (op, draw(st.sampled_from([2.0, -0.5, 3.0]))), shapes[i]


def _inplace_acg(v, p):
    op, s = p
    u = v[0].clone()
    getattr(u, op)(v[1] if s is None else s)
    return u


def _inplace_jnp(v, p):
    op, s = p
    other = v[1] if s is None else s
    return {"mul_": jnp.multiply, "add_": jnp.add, "sub_": jnp.subtract,
            "div_": jnp.divide}[op](v[0], other)


def _view_inplace_gen(draw, shapes):
    """u = x.clone(); u[view].<op>_(scalar): a write through a view (basic indexing) into u."""
    made = _index_gen(draw, shapes)
    if made is None or made[1][0] == "list":  # advanced indexing copies: not a view
        return None
    (i,), key, _ = made
    op = draw(st.sampled_from(["mul_", "add_", "sub_", "div_"]))
    return (i,), (key, op, draw(st.sampled_from([2.0, -0.5, 3.0]))), shapes[i]


def _view_inplace_acg(v, p):
    key, op, s = p
    u = v[0].clone()
    getattr(u[_index_key(key, acg.tensor)], op)(s)
    return u


def _view_inplace_jnp(v, p):
    key, op, s = p
    at = v[0].at[_index_key(key, jnp.asarray)]
    return {"mul_": at.multiply, "add_": at.add, "sub_": lambda s: at.add(-s),
            "div_": at.divide}[op](s)


def _same_shape_pair_gen(draw, shapes):
    i = _pick(draw, shapes)
    j = _pick(draw, shapes, lambda t: t == shapes[i])
    return (i, j), (draw(st.sampled_from([0.5, -2.0])),), shapes[i]


def _where_gen(draw, shapes):
    i = _pick(draw, shapes)
    j = _pick(draw, shapes, lambda t: broadcast(shapes[i], t) is not None)
    out = broadcast(shapes[i], shapes[j])
    return ((i, j), (draw(st.sampled_from([0.1, -0.3])),), out) if numel(out) <= MAX_NUMEL \
        else None


def _softmax_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 1)
    if i is None:
        return None
    return (i,), (draw(st.integers(-len(shapes[i]), len(shapes[i]) - 1)),), shapes[i]


def _clamp_gen(draw, shapes):
    i = _pick(draw, shapes)
    return (i,), (draw(st.sampled_from([-0.5, -1.0])), draw(st.sampled_from([0.5, 1.2]))), \
        shapes[i]


def _pow_gen(exps: list):
    def gen(draw, shapes):
        i = _pick(draw, shapes)
        return (i,), (draw(st.sampled_from(exps)),), shapes[i]
    return gen


def _scalar_fn(fwd: Callable, rev: Callable) -> Callable:
    return lambda x, s, reflected: rev(s, x) if reflected else fwd(x, s)


def _pos(x):  # values kept away from 0 and negative numbers, written identically on both sides
    return x * x + 0.5


def _jnp_abs(x):  # PyTorch's |x|' = sign(x), 0 at 0 (jnp.abs gives 1 there)
    return x * jnp.sign(x)


def _jnp_clamp(x, lo, hi):  # PyTorch's clamp passes the gradient at the bounds (jnp.clip halves it)
    return jnp.where((x >= lo) & (x <= hi), x, jnp.clip(x, lo, hi))


def _jnp_var(x, d, keepdim):
    return jnp.var(x, axis=d, ddof=1, keepdims=keepdim)


def _scan_gen(draw, shapes):
    """A dim of a value with at least one dim (output shape unchanged): cumsum, sort."""
    i = _pick(draw, shapes, lambda s: len(s) >= 1)
    if i is None:
        return None
    n = len(shapes[i])
    return (i,), (draw(st.integers(-n, n - 1)),), shapes[i]


def _tril_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 2)
    return None if i is None else ((i,), (draw(st.sampled_from([-1, 0, 1])),), shapes[i])


def _topk_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: any(n >= 2 for n in s))
    if i is None:
        return None
    s = shapes[i]
    d = draw(st.sampled_from([d for d in range(len(s)) if s[d] >= 2]))
    k = draw(st.integers(1, s[d]))
    return (i,), (d, k), s[:d] + (k,) + s[d + 1:]


def _diff_gen(draw, shapes):  # a dim of length >= 2, one shorter after diff
    i = _pick(draw, shapes, lambda s: any(n >= 2 for n in s))
    if i is None:
        return None
    s = shapes[i]
    d = draw(st.sampled_from([d for d in range(len(s)) if s[d] >= 2]))
    return (i,), (d,), s[:d] + (s[d] - 1,) + s[d + 1:]


def _sum0_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 1)
    return None if i is None else ((i,), (), shapes[i][1:])


def _jnp_topk(x, d, k):
    return jnp.moveaxis(jax.lax.top_k(jnp.moveaxis(x, d, -1), k)[0], -1, d)


def _mm_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) == 2)
    if i is None:
        return None
    j = _pick(draw, shapes, lambda s: len(s) == 2 and s[0] == shapes[i][1])
    return None if j is None else ((i, j), (), (shapes[i][0], shapes[j][1]))


def _attention_gen(draw, shapes):  # self-attention of a [..., L, E] value
    i = _pick(draw, shapes, lambda s: len(s) >= 2)
    return None if i is None else ((i,), (draw(st.booleans()),), shapes[i])


def _jnp_attention(x, causal):
    s = x @ jnp.swapaxes(x, -1, -2) / np.sqrt(x.shape[-1])
    if causal:
        s = jnp.where(np.tril(np.ones(s.shape[-2:], bool)), s, -jnp.inf)
    return jax.nn.softmax(s, -1) @ x


def _pad_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) >= 1 and s[-1] >= 2)
    if i is None:
        return None
    lo, hi = draw(st.sampled_from([(1, 0), (0, 2), (1, 1)]))
    mode = draw(st.sampled_from(["constant", "reflect", "replicate"]))
    mode = "replicate" if mode == "reflect" and max(lo, hi) >= shapes[i][-1] else mode
    out = shapes[i][:-1] + (shapes[i][-1] + lo + hi,)
    return ((i,), (lo, hi, mode), out) if numel(out) <= MAX_NUMEL else None


def _jnp_pad(x, lo, hi, mode):
    pads = [(0, 0)] * (x.ndim - 1) + [(lo, hi)]
    return jnp.pad(x, pads, mode={"replicate": "edge"}.get(mode, mode))


def _avg_pool_gen(draw, shapes):
    i = _pick(draw, shapes, lambda s: len(s) == 3 and min(s[1:]) >= 2)
    return None if i is None else ((i,), (), shapes[i][:1] + (shapes[i][1] - 1,
                                                                shapes[i][2] - 1))


def _jnp_avg_pool(x):  # 2x2 windows at stride 1, written as the four shifted slices
    return (x[:, :-1, :-1] + x[:, 1:, :-1] + x[:, :-1, 1:] + x[:, 1:, 1:]) / 4


def _jnp_normalize(x, d):  # max(||x||, eps) with the clamp under the root, as F.normalize
    return x / jnp.sqrt(jnp.maximum((x * x).sum(d, keepdims=True), 1e-24))


OPS: dict[str, OpSpec] = {
    "neg": unary(lambda x: -x, lambda x: -x),
    "mul_s": scalar_op(_scalar_fn(lambda x, s: x * s, lambda s, x: s * x),
                       _scalar_fn(lambda x, s: x * s, lambda s, x: s * x)),
    "add_s": scalar_op(_scalar_fn(lambda x, s: x + s, lambda s, x: s + x),
                       _scalar_fn(lambda x, s: x + s, lambda s, x: s + x)),
    "sub_s": scalar_op(_scalar_fn(lambda x, s: x - s, lambda s, x: s - x),
                       _scalar_fn(lambda x, s: x - s, lambda s, x: s - x)),
    "div_s": scalar_op(_scalar_fn(lambda x, s: x / s, lambda s, x: s / _pos(x)),
                       _scalar_fn(lambda x, s: x / s, lambda s, x: s / _pos(x))),
    "rpow_s": scalar_op(lambda x, s, r: s ** x, lambda x, s, r: s ** x, [1.5, 2.0, 0.5]),
    "sin": unary(lambda x: x.sin(), jnp.sin),
    "cos": unary(lambda x: x.cos(), jnp.cos),
    "tanh": unary(lambda x: x.tanh(), jnp.tanh),
    "sigmoid": unary(lambda x: x.sigmoid(), lambda x: 1 / (1 + jnp.exp(-x))),
    "exp": unary(lambda x: x.exp(), jnp.exp),
    "log": unary(lambda x: _pos(x).log(), lambda x: jnp.log(_pos(x))),
    "sqrt": unary(lambda x: _pos(x).sqrt(), lambda x: jnp.sqrt(_pos(x))),
    "relu": unary(lambda x: x.relu(), lambda x: jnp.where(x > 0, x, 0.0)),
    "abs": unary(lambda x: x.abs(), _jnp_abs),
    "clamp": OpSpec(_clamp_gen, lambda v, p: v[0].clamp(*p), lambda v, p: _jnp_clamp(v[0], *p)),
    "pow_int": OpSpec(_pow_gen([2, 3]), lambda v, p: v[0] ** p[0], lambda v, p: v[0] ** p[0]),
    "pow_float": OpSpec(_pow_gen([0.5, 1.5, -1.0, 2.5]),
                        lambda v, p: (v[0].abs() + 0.5) ** p[0],
                        lambda v, p: (_jnp_abs(v[0]) + 0.5) ** p[0]),
    "add": binary(lambda x, y: x + y, jnp.add),
    "sub": binary(lambda x, y: x - y, jnp.subtract),
    "mul": binary(lambda x, y: x * y, jnp.multiply),
    "div": binary(lambda x, y: x / _pos(y), lambda x, y: x / _pos(y)),
    "maximum": binary(acg.maximum, jnp.maximum),
    "where": OpSpec(_where_gen, lambda v, p: acg.where(v[0] > p[0], v[0], v[1] * 0.5),
                    lambda v, p: jnp.where(v[0] > p[0], v[0], v[1] * 0.5)),
    "sum_all": unary(lambda x: x.sum(), jnp.sum, out=lambda s: ()),
    "sum": OpSpec(_dim_gen(), lambda v, p: v[0].sum(p[0], keepdim=p[1]),
                  lambda v, p: jnp.sum(v[0], axis=p[0], keepdims=p[1])),
    "mean": OpSpec(_dim_gen(), lambda v, p: v[0].mean(p[0], keepdim=p[1]),
                   lambda v, p: jnp.mean(v[0], axis=p[0], keepdims=p[1])),
    "amax": OpSpec(_dim_gen(), lambda v, p: v[0].amax(p[0], keepdim=p[1]),
                   lambda v, p: jnp.max(v[0], axis=p[0], keepdims=p[1])),
    "var": OpSpec(_dim_gen(lambda s, d: s[d] >= 2), lambda v, p: v[0].var(p[0], keepdim=p[1]),
                  lambda v, p: _jnp_var(v[0], *p)),
    "softmax": OpSpec(_softmax_gen, lambda v, p: F.softmax(v[0], p[0]),
                      lambda v, p: jax.nn.softmax(v[0], axis=p[0])),
    "reshape": OpSpec(_reshape_gen, lambda v, p: v[0].reshape(p[0]),
                      lambda v, p: jnp.reshape(v[0], p[0])),
    "transpose": OpSpec(_transpose_gen, lambda v, p: v[0].transpose(*p),
                        lambda v, p: jnp.swapaxes(v[0], *p)),
    "permute": OpSpec(_permute_gen, lambda v, p: v[0].permute(p[0]),
                      lambda v, p: jnp.transpose(v[0], p[0])),
    "unsqueeze": OpSpec(_unsqueeze_gen, lambda v, p: v[0].unsqueeze(p[0]),
                        lambda v, p: jnp.expand_dims(v[0], p[0])),
    "squeeze": OpSpec(_dim_gen(lambda s, d: s[d] == 1, keep=False),
                      lambda v, p: v[0].squeeze(p[0]), lambda v, p: jnp.squeeze(v[0], p[0])),
    "expand": OpSpec(_expand_gen, lambda v, p: v[0].expand(*p[0]),
                     lambda v, p: jnp.broadcast_to(v[0], p[0])),
    "index": OpSpec(_index_gen, lambda v, p: v[0][_index_key(p, acg.tensor)],
                    lambda v, p: v[0][_index_key(p, jnp.asarray)]),
    "select": OpSpec(_select_gen, _select_acg, _select_jnp),
    "matmul": OpSpec(_matmul_gen, _matmul_acg, _matmul_jnp),
    "linear": OpSpec(_linear_gen, lambda v, p: F.linear(*v),
                     lambda v, p: v[0] @ v[1].T + (v[2] if len(v) > 2 else 0)),
    "cat": OpSpec(_join_gen(stack=False), lambda v, p: acg.cat([v[0], v[1]], p[0]),
                  lambda v, p: jnp.concatenate([v[0], v[1]], p[0])),
    "stack": OpSpec(_join_gen(stack=True), lambda v, p: acg.stack([v[0], v[1]], p[0]),
                    lambda v, p: jnp.stack([v[0], v[1]], p[0])),
    "tril": OpSpec(_tril_gen, lambda v, p: v[0].tril(p[0]), lambda v, p: jnp.tril(v[0], p[0])),
    "cumsum": OpSpec(_scan_gen, lambda v, p: v[0].cumsum(p[0]),
                     lambda v, p: jnp.cumsum(v[0], p[0])),
    "logsumexp": OpSpec(_dim_gen(), lambda v, p: v[0].logsumexp(p[0], keepdim=p[1]),
                        lambda v, p: jax.nn.logsumexp(v[0], p[0], keepdims=p[1])),
    "masked_fill": unary(lambda x: x.masked_fill(x > 0.3, 0.5),
                         lambda x: jnp.where(x > 0.3, 0.5, x)),
    "sort": OpSpec(_scan_gen, lambda v, p: v[0].sort(p[0]).values,
                   lambda v, p: jnp.sort(v[0], p[0])),
    "topk": OpSpec(_topk_gen, lambda v, p: v[0].topk(p[1], p[0]).values,
                   lambda v, p: _jnp_topk(v[0], *p)),
    "roll": OpSpec(_scan_gen, lambda v, p: v[0].roll(1, p[0]),
                   lambda v, p: jnp.roll(v[0], 1, p[0])),
    "cumprod": OpSpec(_scan_gen, lambda v, p: _pos(v[0]).cumprod(p[0]),
                      lambda v, p: jnp.cumprod(_pos(v[0]), p[0])),
    "diff": OpSpec(_diff_gen, lambda v, p: v[0].diff(dim=p[0]),
                   lambda v, p: jnp.diff(v[0], axis=p[0])),
    "einsum_mm": OpSpec(_mm_gen, lambda v, p: acg.einsum("ij,jk->ik", v[0], v[1]),
                        lambda v, p: jnp.einsum("ij,jk->ik", v[0], v[1])),
    "einsum_sum0": OpSpec(_sum0_gen, lambda v, p: acg.einsum("i...->...", v[0]),
                          lambda v, p: jnp.einsum("i...->...", v[0])),
    "inplace": OpSpec(_inplace_gen, _inplace_acg, _inplace_jnp),
    "inplace_view": OpSpec(_view_inplace_gen, _view_inplace_acg, _view_inplace_jnp),
    "cube_fn": OpSpec(_pow_gen([0.5, -2.0]), lambda v, p: Cube.apply(v[0], p[0]),
                      lambda v, p: v[0] * v[0] * v[0] * p[0]),
    "silu": unary(F.silu, jax.nn.silu),
    "softplus": unary(F.softplus, jax.nn.softplus),
    "normalize": OpSpec(_softmax_gen, lambda v, p: F.normalize(v[0], dim=p[0]),
                        lambda v, p: _jnp_normalize(v[0], p[0])),
    "smooth_l1": OpSpec(_same_shape_pair_gen, lambda v, p: F.smooth_l1_loss(
        v[0], v[1], reduction="none", beta=abs(p[0])), lambda v, p: jnp.where(
        jnp.abs(v[0] - v[1]) < abs(p[0]), 0.5 * (v[0] - v[1]) ** 2 / abs(p[0]),
        jnp.abs(v[0] - v[1]) - 0.5 * abs(p[0]))),
    "attention": OpSpec(_attention_gen, lambda v, p: F.scaled_dot_product_attention(
        v[0], v[0], v[0], is_causal=p[0]), lambda v, p: _jnp_attention(v[0], p[0])),
    "pad": OpSpec(_pad_gen, lambda v, p: F.pad(v[0], p[:2], mode=p[2]),
                  lambda v, p: _jnp_pad(v[0], *p)),
    "avg_pool": OpSpec(_avg_pool_gen, lambda v, p: F.avg_pool2d(v[0], 2, 1),
                       lambda v, p: _jnp_avg_pool(v[0])),
    "muladd_fn": OpSpec(_same_shape_pair_gen, lambda v, p: MulAdd.apply(v[0], v[1], p[0]),
                        lambda v, p: v[0] * v[1] + v[0] * p[0]),
}


# -- programs as data ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    args: tuple[int, ...]  # indices of values (leaves first, then op results)
    params: tuple


@dataclasses.dataclass(frozen=True)
class Hook:
    kind: str  # "tensor", "pre", "post", "post_acc", "retain"
    target: int  # value index
    scale: float | None  # None: the hook only records (returns None)
    pure: bool  # decorated with compiled_autograd.pure_hook (traced into the graph)


@dataclasses.dataclass(frozen=True)
class Program:
    leaf_shapes: tuple[Shape, ...]
    ops: tuple[Op, ...]
    hooks: tuple[Hook, ...]
    loss: tuple[tuple[int, float], ...]  # (value index, coefficient): sum of (v * c).sum()
    has_grad: tuple[bool, ...]  # which leaves start with a .grad
    n_backward: int  # 2: backward(retain_graph=True) then backward again
    shapes: tuple[Shape, ...] = ()  # every value's shape, as the generator tracked it

    @property
    def n_values(self) -> int:
        return len(self.leaf_shapes) + len(self.ops)

    def data(self, seed: int) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        """Leaf values and initial grads, float64, drawn from ``seed``."""
        rng = np.random.default_rng(seed)
        leaves = [rng.uniform(-1.5, 1.5, s) for s in self.leaf_shapes]
        grads = [rng.uniform(-1, 1, s) if g else None
                 for s, g in zip(self.leaf_shapes, self.has_grad)]
        return leaves, grads

    def source(self) -> str:
        """The program as acg code, for failure reports and regression tests."""
        lines = [f"v{i} = leaf{s}" for i, s in enumerate(self.leaf_shapes)]
        n = len(self.leaf_shapes)
        for k, op in enumerate(self.ops):
            args = ", ".join(f"v{a}" for a in op.args)
            lines.append(f"v{n + k} = {op.name}({args}; {op.params!r})")
        lines += [f"hook {h}" for h in self.hooks]
        lines.append("loss = " + " + ".join(f"(v{i} * {c}).sum()" for i, c in self.loss))
        lines.append(f"has_grad={self.has_grad} n_backward={self.n_backward}")
        return "\n".join(lines)


@st.composite
def programs(draw: Any, max_ops: int = 8, max_hooks: int = 5) -> Program:
    """A random well-formed program (see module docstring)."""
    shapes = list(draw(st.lists(st.sampled_from(LEAF_SHAPES), min_size=1, max_size=3)))
    n_leaves = len(shapes)
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        name = draw(st.sampled_from(list(OPS)))
        made = OPS[name].gen(draw, shapes)
        if made is None:
            continue
        args, params, out = made
        ops.append(Op(name, tuple(args), params))
        shapes.append(tuple(out))
    used = {a for op in ops for a in op.args}
    sinks = [i for i in range(len(shapes)) if i not in used]
    loss = tuple((i, draw(st.sampled_from([1.0, -0.5, 2.0]))) for i in sinks)
    hooks = tuple(draw(st.lists(_hooks(n_leaves, len(shapes)), max_size=max_hooks)))
    has_grad = tuple(draw(st.lists(st.booleans(), min_size=n_leaves, max_size=n_leaves)))
    return Program(tuple(shapes[:n_leaves]), tuple(ops), hooks, loss, has_grad,
                   draw(st.sampled_from([1, 1, 2])), tuple(shapes))


def _hooks(n_leaves: int, n_values: int) -> st.SearchStrategy[Hook]:
    scale = st.one_of(st.none(), st.sampled_from(HOOK_SCALES))
    any_value = st.integers(0, n_values - 1)
    non_leaf = st.integers(n_leaves, n_values - 1) if n_values > n_leaves else None
    kinds = [st.builds(Hook, st.just("tensor"), any_value, scale, st.booleans()),
             st.builds(Hook, st.just("post_acc"), st.integers(0, n_leaves - 1), st.none(),
                       st.just(False))]
    if non_leaf is not None:
        kinds += [st.builds(Hook, st.sampled_from(["pre", "post"]), non_leaf, scale,
                            st.booleans()),
                  st.builds(Hook, st.just("retain"), non_leaf, st.none(), st.just(False))]
    return st.one_of(kinds).map(lambda h: dataclasses.replace(h, pure=h.pure and
                                                              h.scale is not None))


# -- the acg interpreter -------------------------------------------------------------------

class Result(NamedTuple):
    grads: list[np.ndarray | None]  # leaf .grad after the backward calls
    retained: dict[int, np.ndarray | None]  # value index -> .grad of a retain_grad value
    log: list[tuple[int, list[np.ndarray], list]]  # (hook, arrays it got, leaf grads seen)
    values: list[np.ndarray]  # every value of the forward


def build_acg(program: Program, seed: int) -> tuple[list[acg.Tensor], list[acg.Tensor], list]:
    """Leaves, every value, and the hook log (filled during backward)."""
    leaf_data, grad_data = program.data(seed)
    leaves = [acg.tensor(d, dtype=acg.float64, requires_grad=True) for d in leaf_data]
    for t, g in zip(leaves, grad_data):
        if g is not None:
            t.grad = acg.tensor(g, dtype=acg.float64)
    values = list(leaves)
    for op, shape in zip(program.ops, value_shapes(program)[len(leaves):]):
        out = OPS[op.name].acg([values[a] for a in op.args], op.params)
        assert all(out is not v for v in values), f"{op.name} returned an existing tensor"
        assert tuple(out.shape) == shape, f"{op.name}{op.params}: shape {out.shape} != {shape}"
        values.append(out)
    log: list = []
    for k, h in enumerate(program.hooks):
        _register(h, k, values[h.target], log, leaves)
    return leaves, values, log


def run_acg(program: Program, seed: int, mode: Callable) -> Result:
    """Build the program, then run its backward(s) inside ``mode()``."""
    leaves, values, log = build_acg(program, seed)
    loss = loss_of(values, program.loss)
    with mode():
        for k in range(program.n_backward):
            loss.backward(retain_graph=k + 1 < program.n_backward)
    retained = {h.target: _np(values[h.target].grad) for h in program.hooks if h.kind == "retain"}
    return Result([_np(t.grad) for t in leaves], retained, log,
                  [np.asarray(v.detach().numpy()) for v in values])


def loss_of(values: list, loss: tuple) -> Any:
    total = None
    for i, c in loss:
        term = (values[i] * c).sum()
        total = term if total is None else total + term
    return total


def _np(t: acg.Tensor | None) -> np.ndarray | None:
    return None if t is None else np.array(t.detach().numpy())


def _scaled(gs: tuple, c: float) -> tuple:
    return tuple(None if g is None else g * c for g in gs)


def _pure_scaler(kind: str, c: float) -> Callable:
    if kind == "tensor":
        return lambda g: g * c
    if kind == "pre":
        return lambda go: _scaled(go, c)
    return lambda gi, go: _scaled(gi, c)


def _register(h: Hook, k: int, t: acg.Tensor, log: list, leaves: list) -> None:
    """Attach hook number ``k`` of ``h.kind`` to ``t``. A recording hook logs what it is
    given and every leaf's ``.grad`` as it sees it (writes must not be reordered)."""
    c = h.scale

    def record(*arrays: Any) -> None:
        log.append((k, [np.array(a.detach().numpy()) for a in arrays if a is not None],
                    [_np(leaf.grad) for leaf in leaves]))
    if h.kind == "tensor":
        def fn(g):
            if c is None:
                return record(g)
            return g * c
    elif h.kind == "pre":
        def fn(go):
            if c is None:
                return record(*go)
            return _scaled(go, c)
    elif h.kind == "post":
        def fn(gi, go):
            if c is None:
                return record(*gi, *go)
            return _scaled(gi, c)
    elif h.kind == "post_acc":
        def fn(p):
            record(p.grad)
    else:
        t.retain_grad()
        return
    if h.pure:  # a closure of the scale alone: the graph specialises on it
        fn = ca.pure_hook(_pure_scaler(h.kind, c))
    register = {"tensor": t.register_hook, "pre": lambda f: t.grad_fn.register_prehook(f),
                "post": lambda f: t.grad_fn.register_hook(f),
                "post_acc": t.register_post_accumulate_grad_hook}[h.kind]
    register(fn)


# -- the jax.numpy oracle ------------------------------------------------------------------

def scale_grad(x: jax.Array, c: float) -> jax.Array:
    """Identity forward (exactly: x + 0); the cotangent is multiplied by ``c``."""
    if c == 1.0:
        return x
    fixed = jax.lax.stop_gradient(x)
    return fixed + (x - fixed) * c


class Expected(NamedTuple):
    grads: list[np.ndarray]  # leaf .grad after all backward calls (initial grad included)
    step: list[np.ndarray]  # what one backward adds to each leaf's .grad
    initial: list[np.ndarray | None]  # each leaf's .grad before the first backward
    retained: dict[int, np.ndarray]  # value index -> .grad after retain_grad
    seen: list[np.ndarray]  # value index -> gradient its first tensor hook receives
    values: list[np.ndarray]  # every forward value


def _scales(program: Program, kinds: tuple[str, ...]) -> dict[int, float]:
    out: dict[int, float] = {}
    for h in program.hooks:
        if h.kind in kinds and h.scale is not None:
            out[h.target] = out.get(h.target, 1.0) * h.scale
    return out


def forward_jnp(program: Program, leaves: list, pins: list | None = None,
                pouts: list | None = None) -> list:
    """Every value of the program in jax.numpy; with probes, hooks act on cotangents."""
    node_scale = _scales(program, ("pre", "post"))
    tensor_scale = _scales(program, ("tensor",))
    values: list = []
    for i in range(program.n_values):
        if i < len(leaves):
            v = leaves[i]
        else:
            op = program.ops[i - len(leaves)]
            v = OPS[op.name].jnp([values[a] for a in op.args], op.params)
            v = scale_grad(v, node_scale.get(i, 1.0))
        if pins is not None:
            v = scale_grad(v + pins[i], tensor_scale.get(i, 1.0)) + pouts[i]  # probes are 0
        values.append(v)
    return values


def oracle(program: Program, seed: int) -> Expected:
    """jax.grad of the program written in jax.numpy, hooks as cotangent scalings."""
    leaf_data, grad_data = program.data(seed)
    values, (g_leaves, g_pin, g_pout) = _values_and_grads(program, leaf_data)
    k = program.n_backward
    grads = [np.asarray(g) * k + (0 if g0 is None else g0) for g, g0 in zip(g_leaves, grad_data)]
    retained = {h.target: np.asarray(g_pin[h.target]) * k for h in program.hooks
                if h.kind == "retain"}
    return Expected(grads, [np.asarray(g) for g in g_leaves], grad_data, retained,
                    [np.asarray(g) for g in g_pout], [np.asarray(v) for v in values])


def _values_and_grads(program: Program, leaf_data: list[np.ndarray]) -> tuple:
    """The forward values and jax.grad w.r.t. leaves and probes, in one pass (op by op,
    not jitted: jax caches each primitive's compile per shape across examples)."""
    leaves = [jnp.asarray(d) for d in leaf_data]
    zeros = [jnp.zeros(s) for s in value_shapes(program)]

    def loss(leaves, pins, pouts):
        values = forward_jnp(program, leaves, pins, pouts)
        return sum((values[i] * c).sum() for i, c in program.loss), values
    grads, values = jax.grad(loss, (0, 1, 2), has_aux=True)(leaves, zeros, zeros)
    return values, grads


@functools.lru_cache(maxsize=64)
def value_shapes(program: Program) -> tuple[Shape, ...]:
    """Every value's shape by jax's shape inference (checked against the generator's)."""
    shapes = list(program.leaf_shapes)
    for op in program.ops:
        structs = [jax.ShapeDtypeStruct(shapes[a], jnp.float64) for a in op.args]
        out = jax.eval_shape(lambda *xs, op=op: OPS[op.name].jnp(list(xs), op.params), *structs)
        shapes.append(tuple(out.shape))
    assert not program.shapes or tuple(shapes) == program.shapes, "generator shape bug"
    return tuple(shapes)
