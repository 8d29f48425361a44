"""Recurrent layers: one layer in one direction over a whole sequence is ONE op.

``rnn_layer`` runs the time loop as a ``jax.lax.scan`` inside one kernel, so a 1000-step
sequence costs one dispatch eagerly and one node in a captured graph. Its backward,
``rnn_layer_backward``, is one op too: a reverse scan over the per-step pre-activations the
forward saved (no recomputation of the recurrent matmul), then the weight gradients as a few
large matmuls over every step at once.

Layout is time-major, ``input [T, B, I]``. Each step computes ``z = h @ w_hh.T + b_hh`` and
combines it with the input projection ``xp = x @ w_ih.T + b_ih`` (computed for all steps at
once, before the loop) into ``u``, the step's only saved activation:

- RNN_TANH / RNN_RELU / LSTM: ``u = xp + z`` (gate order i, f, g, o for LSTM);
- GRU: ``u = [xp_r + z_r, xp_z + z_z, xp_n, z_n]`` (r, z, n; n needs ``r * z_n``).

``lengths`` (int [B], optional) masks step t of sequence b when ``t >= lengths[b]``: the
state is carried unchanged and the output is zero there, so the forward direction's final
state is the one at each sequence's own last step and the reverse direction starts there.
Modes without a cell state carry a ``[B, 0]`` one (it costs nothing).
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, reduce_grad
from ._dtypes import category, is_float

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# -- the cell: elementwise given u ------------------------------------------------------------
def _split(a: Any, n: int) -> list:
    return jnp.split(a, n, axis=-1)


def _combine(mode: str, xp: Any, z: Any) -> Any:
    """The step's saved activation ``u`` from the input and hidden projections."""
    if mode != "GRU":
        return xp + z
    h2 = 2 * (xp.shape[-1] // 3)
    return jnp.concatenate([xp[..., :h2] + z[..., :h2], xp[..., h2:], z[..., h2:]], -1)


def _uncombine(mode: str, du: Any) -> tuple[Any, Any]:
    """(d xp, d z) from d u: the transpose of :func:`_combine`."""
    if mode != "GRU":
        return du, du
    h = du.shape[-1] // 4
    return du[..., :3 * h], jnp.concatenate([du[..., :2 * h], du[..., 3 * h:]], -1)


def _cell(mode: str, u: Any, h: Any, c: Any) -> tuple[Any, Any]:
    """(new hidden before projection, new cell state) from u and the previous state."""
    if mode == "RNN_TANH":
        return jnp.tanh(u), c
    if mode == "RNN_RELU":
        return jax.nn.relu(u), c
    if mode == "LSTM":
        i, f, g, o = _split(u, 4)
        c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c2), c2
    r, zg, xn, hn = _split(u, 4)
    zg = jax.nn.sigmoid(zg)
    n = jnp.tanh(xn + jax.nn.sigmoid(r) * hn)
    return (1 - zg) * n + zg * h, c


def _step_fn(mode: str, proj: bool, masked: bool) -> Callable:
    """``f(u, h, c, w_hr, m) -> (h', c')``: the cell, projection and mask of one step."""
    def f(u: Any, h: Any, c: Any, w_hr: Any, m: Any) -> tuple[Any, Any]:
        h2, c2 = _cell(mode, u, h, c)
        if proj:
            h2 = h2 @ w_hr.T
        if masked:
            h2, c2 = jnp.where(m, h2, h), jnp.where(m, c2, c)
        return h2, c2
    return f


def _mask(lengths: Any, steps: int) -> Any:
    """[T, B, 1] bool: step t of sequence b is inside it."""
    return (jnp.arange(steps)[:, None] < lengths[None, :])[..., None]


def _empty_cell(x: Any) -> Any:
    return jnp.zeros((x.shape[1], 0), x.dtype)


# -- forward ----------------------------------------------------------------------------------
def _rnn_layer(x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
               w_hr: Any, lengths: Any, mode: str, reverse: bool = False) -> tuple:
    xp = x @ w_ih.T if b_ih is None else x @ w_ih.T + b_ih  # every step's input at once
    cx = _empty_cell(x) if cx is None else cx
    mask = None if lengths is None else _mask(lengths, x.shape[0])
    f = _step_fn(mode, w_hr is not None, mask is not None)

    def step(carry: tuple, inp: tuple) -> tuple:
        h, c = carry
        xp_t, m = inp
        z = h @ w_hh.T if b_hh is None else h @ w_hh.T + b_hh
        u = _combine(mode, xp_t, z)
        h2, c2 = f(u, h, c, w_hr, m)
        return (h2, c2), (h2, u, c2)
    (hn, cn), (ys, us, cs) = jax.lax.scan(step, (hx, cx), (xp, mask), reverse=reverse)
    out = ys if mask is None else jnp.where(mask, ys, jnp.zeros((), ys.dtype))
    return out, hn, cn, us, cs


def _layer_err(msg: str) -> RuntimeError:
    return RuntimeError(f"rnn_layer: {msg}")


def _check_sizes(x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                 w_hr: Any, mode: str) -> tuple[int, int]:
    """(hidden size, output size) after checking every shape against the weights."""
    if mode not in MODES:
        raise _layer_err(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    g = w_ih.shape[0]
    if x.ndim != 3 or w_ih.ndim != 2 or g % GATES[mode] or x.shape[2] != w_ih.shape[1]:
        raise _layer_err(f"expected input [T, B, I] and weight_ih [{GATES[mode]}*H, I], got "
                         f"input {list(x.shape)} and weight_ih {list(w_ih.shape)}")
    hidden = g // GATES[mode]
    out = hidden if w_hr is None else w_hr.shape[0]
    if w_hr is not None and tuple(w_hr.shape) != (out, hidden):
        raise _layer_err(f"expected weight_hr [P, {hidden}], got {list(w_hr.shape)}")
    if tuple(w_hh.shape) != (g, out):
        raise _layer_err(f"expected weight_hh {[g, out]}, got {list(w_hh.shape)}")
    for name, b in (("bias_ih", b_ih), ("bias_hh", b_hh)):
        if b is not None and tuple(b.shape) != (g,):
            raise _layer_err(f"expected {name} [{g}], got {list(b.shape)}")
    if tuple(hx.shape) != (x.shape[1], out):
        raise _layer_err(f"Expected hidden size {[x.shape[1], out]}, got {list(hx.shape)}")
    if mode == "LSTM" and (cx is None or tuple(cx.shape) != (x.shape[1], hidden)):
        raise _layer_err(f"Expected cell state size {[x.shape[1], hidden]}, got "
                         f"{None if cx is None else list(cx.shape)}")
    return hidden, out


def _check_dtypes(*tensors: Any) -> None:
    present = [t for t in tensors if t is not None]
    if not is_float(present[0].dtype) or any(t.dtype != present[0].dtype for t in present):
        raise _layer_err(f"input, states and weights must share one floating dtype, got "
                         f"{[str(t.dtype) for t in present]}")


def _rnn_rule(x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
              w_hr: Any, lengths: Any, mode: str, reverse: bool = False) -> tuple:
    hidden, out = _check_sizes(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode)
    _check_dtypes(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    if lengths is not None and (category(lengths.dtype) != 1 or tuple(lengths.shape)
                                != (x.shape[1],)):
        raise _layer_err(f"expected integer lengths [{x.shape[1]}], got {lengths.dtype} "
                         f"{list(lengths.shape)}")
    t, b, dt = x.shape[0], x.shape[1], x.dtype
    width = w_ih.shape[0] + (w_ih.shape[0] // 3 if mode == "GRU" else 0)
    cell = hidden if mode == "LSTM" else 0
    return (TensorMeta((t, b, out), dt), TensorMeta((b, out), dt), TensorMeta((b, cell), dt),
            TensorMeta((t, b, width), dt), TensorMeta((t, b, cell), dt))


# -- backward ---------------------------------------------------------------------------------
def _previous(seq: Any, first: Any, mask: Any, reverse: bool) -> Any:
    """The state each step started from: the step before's (in scan order), or the initial
    state where that step was masked out (a sequence's first real step)."""
    shifted = jnp.concatenate([seq[1:], first[None]]) if reverse else \
        jnp.concatenate([first[None], seq[:-1]])
    if mask is None:
        return shifted
    valid = jnp.concatenate([mask[1:], jnp.zeros_like(mask[:1])]) if reverse else \
        jnp.concatenate([jnp.zeros_like(mask[:1]), mask[:-1]])
    return jnp.where(valid, shifted, first[None])


def _rnn_layer_bwd(g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any, cx: Any, w_ih: Any,
                   w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any, lengths: Any, out: Any, us: Any,
                   cs: Any, mode: str, reverse: bool = False) -> tuple:
    """Gradients of input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr (absent ones: shape [0]).
    The biases are read only for whether they exist (``us`` already holds them)."""
    lstm, proj, bias = mode == "LSTM", w_hr is not None, b_ih is not None
    cx = _empty_cell(x) if cx is None else cx
    g_cn = g_cn if lstm else cx
    mask = None if lengths is None else _mask(lengths, x.shape[0])
    h_prev = _previous(out, hx, mask, reverse)  # the output is the hidden state where valid
    c_prev = _previous(cs, cx, mask, reverse) if lstm else jnp.zeros(cs.shape, cs.dtype)
    f = _step_fn(mode, proj, mask is not None)
    w = w_hr if proj else jnp.zeros((0,), x.dtype)

    def step(carry: tuple, inp: tuple) -> tuple:
        dh, dc, dw = carry
        u, hp, cp, m, go = inp
        dh = dh + (go if m is None else jnp.where(m, go, jnp.zeros((), go.dtype)))
        _, vjp = jax.vjp(lambda u_, h_, c_, w_: f(u_, h_, c_, w_, m), u, hp, cp, w)
        du, dhp, dcp, dw_t = vjp((dh, dc))
        dxp, dz = _uncombine(mode, du)
        return (dhp + dz @ w_hh, dcp, dw + dw_t), (dxp, dz)
    init = (g_hn, g_cn, jnp.zeros_like(w))
    (dh0, dc0, dw_hr), (dxp, dz) = jax.lax.scan(
        step, init, (us, h_prev, c_prev, mask, g_out), reverse=not reverse)
    gw_ih = jnp.einsum("tbg,tbi->gi", dxp, x)
    gw_hh = jnp.einsum("tbg,tbh->gh", dz, h_prev)
    empty = jnp.zeros((0,), x.dtype)
    gb_ih, gb_hh = (dxp.sum((0, 1)), dz.sum((0, 1))) if bias else (empty, empty)
    return (dxp @ w_ih, dh0, dc0 if lstm else empty, gw_ih, gw_hh, gb_ih, gb_hh,
            dw_hr if proj else empty)


def _meta_or_empty(t: Any, dt: Any) -> TensorMeta:
    return TensorMeta((0,) if t is None else tuple(t.shape), dt)


def _rnn_bwd_rule(g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any, cx: Any, w_ih: Any,
                  w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any, lengths: Any, out: Any, us: Any,
                  cs: Any, mode: str, reverse: bool = False) -> tuple:
    dt = x.dtype
    return tuple(_meta_or_empty(t, dt) for t in (x, hx, cx if mode == "LSTM" else None, w_ih,
                                                 w_hh, b_ih, b_hh, w_hr))


def _rnn_backward(g: tuple, x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any,
                  b_hh: Any, w_hr: Any, lengths: Any, mode: str, reverse: bool,
                  out: tuple) -> tuple:
    grads = rnn_layer_backward(g[0], g[1], g[2], x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr,
                               lengths, out[0], out[3], out[4], mode, reverse)
    gx, ghx, gcx, gw_ih, gw_hh, gb_ih, gb_hh, gw_hr = grads
    return (reduce_grad(gx, x), reduce_grad(ghx, hx), reduce_grad(gcx, cx),
            reduce_grad(gw_ih, w_ih), reduce_grad(gw_hh, w_hh), reduce_grad(gb_ih, b_ih),
            reduce_grad(gb_hh, b_hh), reduce_grad(gw_hr, w_hr), None)


rnn_layer = defop(
    "rnn_layer(Tensor input, Tensor hx, Tensor? cx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, "
    "Tensor? b_hh, Tensor? w_hr, Tensor? lengths, str mode, bool reverse=False) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    _rnn_layer, shape=_rnn_rule, check=True, backward=_rnn_backward,
    save=("input", "hx", "cx", "w_ih", "w_hh", "b_ih", "b_hh", "w_hr", "lengths", "out"))
# its own op (one program, a reverse scan); its derivative (double backward, e.g. a
# gradient penalty) is a third op that differentiates it with the forward recomputed inside
_BWD_INPUTS = ("grad_output", "grad_hn", "grad_cn", "input", "hx", "cx", "w_ih", "w_hh", "b_ih",
               "b_hh", "w_hr", "lengths")


def _rnn_layer_bwd_bwd(gg_x: Any, gg_hx: Any, gg_cx: Any, gg_w_ih: Any, gg_w_hh: Any,
                       gg_b_ih: Any, gg_b_hh: Any, gg_w_hr: Any, g_out: Any, g_hn: Any,
                       g_cn: Any, x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any,
                       b_hh: Any, w_hr: Any, lengths: Any, mode: str,
                       reverse: bool = False) -> tuple:
    """The vjp of ``rnn_layer_backward`` as a function of its cotangents and the layer's
    inputs; the saved activations are recomputed from those inputs, so their dependence on
    them is counted here (the backward of the backward gives them no gradient)."""
    def first(g_out: Any, g_hn: Any, g_cn: Any, *params: Any) -> tuple:
        out, _, _, us, cs = _rnn_layer(*params, lengths, mode, reverse)
        return _rnn_layer_bwd(g_out, g_hn, g_cn, *params, lengths, out, us, cs, mode, reverse)
    primals = (g_out, g_hn, g_cn, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    _, vjp = jax.vjp(first, *primals)
    grads = vjp((gg_x, gg_hx, gg_cx, gg_w_ih, gg_w_hh, gg_b_ih, gg_b_hh, gg_w_hr))
    empty = jnp.zeros((0,), x.dtype)
    return tuple(empty if g is None else g for g in grads)


def _rnn_bwd_bwd_rule(*args: Any, **kwargs: Any) -> tuple:
    g_out, g_hn, g_cn, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr = args[8:19]
    return tuple(_meta_or_empty(t, x.dtype) for t in (g_out, g_hn, g_cn, x, hx, cx, w_ih, w_hh,
                                                      b_ih, b_hh, w_hr))


def _rnn_backward_backward(gg: tuple, g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any,
                           cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any,
                           lengths: Any, out: Any, us: Any, cs: Any, mode: str, reverse: bool,
                           result: tuple) -> tuple:
    like = (g_out, g_hn, g_cn, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    grads = rnn_layer_double_backward(*gg, *like, lengths, mode, reverse)
    return tuple(reduce_grad(g, t) for g, t in zip(grads, like)) + (None,) * 4


rnn_layer_backward = defop(
    "rnn_layer_backward(Tensor grad_output, Tensor grad_hn, Tensor grad_cn, Tensor input, "
    "Tensor hx, Tensor? cx, Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh, "
    "Tensor? w_hr, Tensor? lengths, Tensor output, Tensor gates, Tensor cells, str mode, "
    "bool reverse=False) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
    _rnn_layer_bwd, shape=_rnn_bwd_rule, backward=_rnn_backward_backward, save=_BWD_INPUTS)
# no derivative registered: a third derivative through a recurrent layer raises, naming it
rnn_layer_double_backward = defop(
    "rnn_layer_double_backward(Tensor gg_input, Tensor gg_hx, Tensor gg_cx, Tensor gg_w_ih, "
    "Tensor gg_w_hh, Tensor gg_b_ih, Tensor gg_b_hh, Tensor gg_w_hr, Tensor grad_output, "
    "Tensor grad_hn, Tensor grad_cn, Tensor input, Tensor hx, Tensor? cx, Tensor w_ih, "
    "Tensor w_hh, Tensor? b_ih, Tensor? b_hh, Tensor? w_hr, Tensor? lengths, str mode, "
    "bool reverse=False) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, "
    "Tensor, Tensor, Tensor)",
    _rnn_layer_bwd_bwd, shape=_rnn_bwd_bwd_rule)
