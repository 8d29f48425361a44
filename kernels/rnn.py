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

import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, reduce_grad, wants
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


def _check_lengths(lengths: Any, x: Any) -> None:
    if lengths is not None and (category(lengths.dtype) != 1 or tuple(lengths.shape)
                                != (x.shape[1],)):
        raise _layer_err(f"expected integer lengths [{x.shape[1]}], got {lengths.dtype.name} "
                         f"{list(lengths.shape)}")


def _rnn_rule(x: Any, hx: Any, cx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
              w_hr: Any, lengths: Any, mode: str, reverse: bool = False) -> tuple:
    hidden, out = _check_sizes(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode)
    _check_dtypes(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    _check_lengths(lengths, x)
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


# -- a stack of layers in one scan: the wavefront ---------------------------------------------
# L unidirectional layers without dropout between them run as ONE op: iteration k of a single
# scan runs layer l at step t = k - l, so the layers' matmuls in an iteration are independent
# (XLA's CPU runtime may run them side by side) and the loop is T + L - 1 long, not L * T. Layer
# l > 0 reads layer l-1's output of the iteration before, so its input projection moves into
# the loop (one matmul on [x_t, h] for every mode but GRU). Layer l is idle (its state held)
# at iterations outside [l, l + T); the saved per-layer sequences are the per-layer op's.
_CHUNKS = 4  # the reverse scan in pieces: a piece's weight gradients overlap the next one


def _pieces(n: int, chunks: int) -> list[tuple[int, int]]:
    """``chunks`` consecutive ``(start, stop)`` ranges covering ``range(n)``, none empty."""
    cuts = sorted({n * i // min(chunks, n) for i in range(min(chunks, n) + 1)})
    return list(zip(cuts, cuts[1:]))


def _per_layer(weights: Any, bias: bool, proj: bool) -> list[tuple]:
    """PyTorch's flat weight list -> per layer ``(w_ih, w_hh, b_ih, b_hh, w_hr)``."""
    n = 2 + 2 * bias + proj
    out = []
    for k in range(0, len(weights), n):
        w = weights[k:k + n]
        out.append((w[0], w[1], w[2] if bias else None, w[3] if bias else None,
                    w[-1] if proj else None))
    return out


def _shift(seq: Any, layer: int, layers: int) -> Any:
    """``[T, ...] -> [T + L - 1, ...]``: layer ``layer``'s step t at iteration t + layer."""
    return jnp.pad(seq, [(layer, layers - 1 - layer)] + [(0, 0)] * (seq.ndim - 1))


def _active(steps: int, layers: int, lengths: Any, layer: int) -> Any:
    """[T + L - 1, B or 1, 1] bool: the iterations where ``layer`` runs a step (and, with
    lengths, one inside the sequence)."""
    if lengths is not None:
        return _shift(_mask(lengths, steps), layer, layers)
    k = jnp.arange(steps + layers - 1)
    return ((k >= layer) & (k < steps + layer))[:, None, None]


def _wave_inputs(mode: str, ws: list[tuple]) -> list[Any]:
    """Per layer > 0 (not GRU): ``[w_ih | w_hh]^T``, so input and hidden projections are
    one matmul on ``[x_t, h]``; None where the two stay apart."""
    return [jnp.concatenate([w[0], w[1]], 1).T if l and mode != "GRU" else None
            for l, w in enumerate(ws)]


def _wave_u(mode: str, l: int, w: tuple, cat: Any, xin: Any, h: Any) -> Any:
    """Layer l's ``u`` from its input ``xin`` (layer 0: already projected) and state ``h``."""
    w_ih, w_hh, b_ih, b_hh, _ = w
    if cat is not None:
        u = jnp.concatenate([xin, h], 1) @ cat
        return u if b_ih is None else u + (b_ih + b_hh)
    xp = xin if l == 0 else (xin @ w_ih.T if b_ih is None else xin @ w_ih.T + b_ih)
    z = h @ w_hh.T if b_hh is None else h @ w_hh.T + b_hh
    return _combine(mode, xp, z)


def _rnn_stack(x: Any, hx: Any, cx: Any, weights: list, lengths: Any, mode: str, bias: bool,
               proj: bool) -> tuple:
    """(top output, h_n [L, B, P], c_n [L, B, C], and per layer stacked on a leading L axis:
    outputs, u and cell states, each ``[L, T, B, ...]``)."""
    ws = _per_layer(weights, bias, proj)
    layers, steps = len(ws), x.shape[0]
    xp = x @ ws[0][0].T if ws[0][2] is None else x @ ws[0][0].T + ws[0][2]
    masks = tuple(_active(steps, layers, lengths, l) for l in range(layers))
    cx = jnp.zeros((layers, x.shape[1], 0), x.dtype) if cx is None else cx
    f, cats = _step_fn(mode, proj, True), _wave_inputs(mode, ws)

    def step(carry: tuple, inp: tuple) -> tuple:
        hs, cs = carry
        xp_k, ms = inp
        us = [_wave_u(mode, l, w, cats[l], xp_k if l == 0 else hs[l - 1], hs[l])
              for l, w in enumerate(ws)]
        new = [f(u, hs[l], cs[l], ws[l][4], ms[l]) for l, u in enumerate(us)]
        hs, cs = tuple(n[0] for n in new), tuple(n[1] for n in new)
        return (hs, cs), (hs, tuple(us), cs)
    init = (tuple(hx), tuple(cx))
    (hn, cn), seqs = jax.lax.scan(step, init, (_shift(xp, 0, layers), masks))
    ys, us, cs = (jnp.stack([a[l:l + steps] for l, a in enumerate(seq)]) for seq in seqs)
    if lengths is not None:
        ys = jnp.where(_mask(lengths, steps)[None], ys, jnp.zeros((), ys.dtype))
    return ys[-1], jnp.stack(hn), jnp.stack(cn), ys, us, cs


class _Like(NamedTuple):
    """A stand-in with the shape of a layer's input, for :func:`_check_sizes`."""
    shape: tuple

    @property
    def ndim(self) -> int:
        return len(self.shape)


def _stack_rule(x: Any, hx: Any, cx: Any, weights: list, lengths: Any, mode: str, bias: bool,
                proj: bool) -> tuple:
    ws, n = _per_layer(weights, bias, proj), 2 + 2 * bias + proj
    if not ws or len(weights) % n:
        raise _layer_err(f"rnn_stack: expected {n} weights per layer, got {len(weights)}")
    if hx.ndim != 3 or hx.shape[0] != len(ws) or (cx is not None and (
            cx.ndim != 3 or cx.shape[0] != len(ws))):
        raise _layer_err(f"rnn_stack: expected states [{len(ws)}, B, ...], got hx "
                         f"{list(hx.shape)}, cx {None if cx is None else list(cx.shape)}")
    h, c, inp = _Like(tuple(hx.shape[1:])), None if cx is None else _Like(tuple(cx.shape[1:])), x
    for w in ws:
        hidden, out = _check_sizes(inp, h, c, *w, mode)
        inp = _Like((x.shape[0], x.shape[1], out))
    _check_dtypes(x, hx, cx, *weights)
    _check_lengths(lengths, x)
    (t, b), dt, layers = tuple(x.shape[:2]), x.dtype, len(ws)
    width = w[0].shape[0] + (w[0].shape[0] // 3 if mode == "GRU" else 0)
    cell = hidden if mode == "LSTM" else 0
    return (TensorMeta((t, b, out), dt), TensorMeta((layers, b, out), dt),
            TensorMeta((layers, b, cell), dt), TensorMeta((layers, t, b, out), dt),
            TensorMeta((layers, t, b, width), dt), TensorMeta((layers, t, b, cell), dt))


def _wave_bwd_step(mode: str, ws: list[tuple], cats: list, f: Callable, wr: tuple
                    ) -> Callable:
    """One reverse iteration: every layer's step backward, from the carried gradients of its
    state and of its output (the layer above's input gradient of the iteration before)."""
    top = len(ws) - 1

    def step(carry: tuple, inp: tuple) -> tuple:
        dh, dc, da, dw = carry
        u, hp, cp, ms, go = inp
        ndh, ndc, ndw, nda, dus = [], [], [], [None] * top, []
        for l, w in enumerate(ws):
            above = jnp.where(ms[l], go, jnp.zeros((), go.dtype)) if l == top else da[l]
            _, vjp = jax.vjp(lambda u_, h_, c_, w_: f(u_, h_, c_, w_, ms[l]),
                             u[l], hp[l], cp[l], wr[l])
            du, dhp, dcp, dw_t = vjp((dh[l] + above, dc[l]))
            dxp, dz = _uncombine(mode, du)
            if cats[l] is not None:  # one matmul: [d input | d h] = du @ [w_ih | w_hh]
                both = du @ cats[l].T
                nda[l - 1], dhp = both[:, :w[0].shape[1]], dhp + both[:, w[0].shape[1]:]
            else:
                dhp = dhp + dz @ w[1]
                if l:
                    nda[l - 1] = dxp @ w[0]
            ndh.append(dhp), ndc.append(dcp), ndw.append(dw[l] + dw_t), dus.append(du)
        return (tuple(ndh), tuple(ndc), tuple(nda), tuple(ndw)), tuple(dus)
    return step


def _rnn_stack_bwd(g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any, cx: Any, weights: list,
                   lengths: Any, ys: Any, us: Any, cs: Any, mode: str, bias: bool,
                   proj: bool, input_grad: bool = True) -> tuple:
    """Gradients of input, hx, cx (shape [0] without one) and the weights, flat in their
    list's order: one reverse scan over the iterations, in pieces whose weight gradients
    (large matmuls over the piece's steps) run while the next piece's loop does. Without
    ``input_grad`` the input's gradient (a large matmul) is skipped: shape [0]."""
    ws, lstm = _per_layer(weights, bias, proj), mode == "LSTM"
    layers, steps = len(ws), x.shape[0]
    cx = jnp.zeros((layers, x.shape[1], 0), x.dtype) if cx is None else cx
    g_cn = g_cn if lstm else cx
    mask = None if lengths is None else _mask(lengths, steps)
    sh = [lambda a, l=l: _shift(a, l, layers) for l in range(layers)]
    hps = [sh[l](_previous(ys[l], hx[l], mask, False)) for l in range(layers)]
    cps = [sh[l](_previous(cs[l], cx[l], mask, False)) if lstm else sh[l](cs[l])
           for l in range(layers)]
    ins = [sh[0](x)] + [sh[l](ys[l - 1]) for l in range(1, layers)]
    seqs = (tuple(sh[l](us[l]) for l in range(layers)), tuple(hps), tuple(cps),
            tuple(_active(steps, layers, lengths, l) for l in range(layers)),
            sh[-1](g_out))
    wr = tuple(w[4] if proj else jnp.zeros((0,), x.dtype) for w in ws)
    step = _wave_bwd_step(mode, ws, _wave_inputs(mode, ws), _step_fn(mode, proj, True), wr)
    carry = (tuple(g_hn), tuple(g_cn), tuple(jnp.zeros_like(h) for h in hx[1:]),
             tuple(jnp.zeros_like(w) for w in wr))
    k, acc, gxs = steps + layers - 1, [[0, 0, 0, 0] for _ in ws], []
    for a, b in reversed(_pieces(k, _CHUNKS)):
        piece = jax.tree_util.tree_map(lambda v: v[a:b], seqs)
        carry, dus = jax.lax.scan(step, carry, piece, reverse=True)
        for l, du in enumerate(dus):
            dxp, dz = _uncombine(mode, du)
            parts = (jnp.einsum("tbg,tbi->gi", dxp, ins[l][a:b]),
                     jnp.einsum("tbg,tbh->gh", dz, hps[l][a:b]), dxp.sum((0, 1)),
                     dz.sum((0, 1)))
            acc[l] = [s + p for s, p in zip(acc[l], parts)]
        if input_grad:
            gxs.append(_uncombine(mode, dus[0])[0] @ ws[0][0])
    dh0, dc0, _, dwr = carry
    flat = []
    for l in range(layers):
        flat += acc[l][:2] + (acc[l][2:] if bias else []) + ([dwr[l]] if proj else [])
    gx = jnp.concatenate(gxs[::-1])[:steps] if input_grad else jnp.zeros((0,), x.dtype)
    gcx = jnp.stack(dc0) if lstm else jnp.zeros((0,), x.dtype)
    return gx, jnp.stack(dh0), gcx, jnp.concatenate([g.reshape(-1) for g in flat])


def _flat_metas(weights: list, dt: Any) -> TensorMeta:
    return TensorMeta((sum(math.prod(w.shape) for w in weights),), dt)


def _stack_bwd_rule(g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any, cx: Any, weights: list,
                    lengths: Any, ys: Any, us: Any, cs: Any, mode: str, bias: bool, proj: bool,
                    input_grad: bool = True) -> tuple:
    dt = x.dtype
    return (_meta_or_empty(x if input_grad else None, dt), TensorMeta(tuple(hx.shape), dt),
            _meta_or_empty(cx if mode == "LSTM" else None, dt), _flat_metas(weights, dt))


def _unflatten(flat: Any, weights: list) -> list:
    """The flat weight gradient cut back into one gradient per weight (our ops: traced)."""
    out, start = [], 0
    for w in weights:
        n = math.prod(w.shape)
        out.append(reduce_grad(flat.narrow(0, start, n).reshape(tuple(w.shape)), w))
        start += n
    return out


def _stack_backward(g: tuple, x: Any, hx: Any, cx: Any, weights: list, lengths: Any, mode: str,
                    bias: bool, proj: bool, out: tuple) -> tuple:
    gx, ghx, gcx, gw = rnn_stack_backward(g[0], g[1], g[2], x, hx, cx, weights, lengths,
                                          out[3], out[4], out[5], mode, bias, proj, wants(x))
    return (reduce_grad(gx, x), reduce_grad(ghx, hx), reduce_grad(gcx, cx),
            _unflatten(gw, weights), None)


rnn_stack = defop(
    "rnn_stack(Tensor input, Tensor hx, Tensor? cx, Tensor[] weights, Tensor? lengths, "
    "str mode, bool bias, bool proj) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
    _rnn_stack, shape=_stack_rule, check=True, backward=_stack_backward,
    save=("input", "hx", "cx", "weights", "lengths", "out"))


def _rnn_stack_bwd_bwd(gg_x: Any, gg_hx: Any, gg_cx: Any, gg_w: Any, g_out: Any, g_hn: Any,
                       g_cn: Any, x: Any, hx: Any, cx: Any, weights: list, lengths: Any,
                       mode: str, bias: bool, proj: bool, input_grad: bool = True) -> tuple:
    """The vjp of ``rnn_stack_backward`` with the forward recomputed inside (as for one
    layer, see :func:`_rnn_layer_bwd_bwd`); the weights' gradient flat."""
    def first(g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any, cx: Any, ws: list) -> tuple:
        _, _, _, ys, us, cs = _rnn_stack(x, hx, cx, ws, lengths, mode, bias, proj)
        return _rnn_stack_bwd(g_out, g_hn, g_cn, x, hx, cx, ws, lengths, ys, us, cs, mode,
                              bias, proj, input_grad)
    _, vjp = jax.vjp(first, g_out, g_hn, g_cn, x, hx, cx, list(weights))
    grads = vjp((gg_x, gg_hx, gg_cx, gg_w))
    empty = jnp.zeros((0,), x.dtype)
    flat = jnp.concatenate([g.reshape(-1) for g in grads[6]])
    return tuple(empty if g is None else g for g in grads[:6]) + (flat,)


def _stack_bwd_bwd_rule(*args: Any, **kwargs: Any) -> tuple:
    g_out, g_hn, g_cn, x, hx, cx, weights = args[4:11]
    return tuple(_meta_or_empty(t, x.dtype) for t in (g_out, g_hn, g_cn, x, hx, cx)) + (
        _flat_metas(weights, x.dtype),)


def _stack_backward_backward(gg: tuple, g_out: Any, g_hn: Any, g_cn: Any, x: Any, hx: Any,
                             cx: Any, weights: list, lengths: Any, ys: Any, us: Any, cs: Any,
                             mode: str, bias: bool, proj: bool, input_grad: bool,
                             result: tuple) -> tuple:
    like = (g_out, g_hn, g_cn, x, hx, cx)
    grads = rnn_stack_double_backward(*gg, *like, weights, lengths, mode, bias, proj,
                                      input_grad)
    return tuple(reduce_grad(g, t) for g, t in zip(grads, like)) + (
        _unflatten(grads[6], weights), None, None, None, None)


rnn_stack_backward = defop(
    "rnn_stack_backward(Tensor grad_output, Tensor grad_hn, Tensor grad_cn, Tensor input, "
    "Tensor hx, Tensor? cx, Tensor[] weights, Tensor? lengths, Tensor outputs, Tensor gates, "
    "Tensor cells, str mode, bool bias, bool proj, bool input_grad=True) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
    _rnn_stack_bwd, shape=_stack_bwd_rule, backward=_stack_backward_backward,
    save=("grad_output", "grad_hn", "grad_cn", "input", "hx", "cx", "weights", "lengths"))
rnn_stack_double_backward = defop(
    "rnn_stack_double_backward(Tensor gg_input, Tensor gg_hx, Tensor gg_cx, Tensor gg_weights, "
    "Tensor grad_output, Tensor grad_hn, Tensor grad_cn, Tensor input, Tensor hx, Tensor? cx, "
    "Tensor[] weights, Tensor? lengths, str mode, bool bias, bool proj, bool input_grad=True) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
    _rnn_stack_bwd_bwd, shape=_stack_bwd_bwd_rule)
