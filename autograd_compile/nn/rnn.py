"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells, with PyTorch's parameters.

Each layer and direction runs as one ``rnn_layer`` op (``kernels/rnn.py``: the time loop is
a ``jax.lax.scan`` inside it, its backward one reverse scan), so a long sequence costs one
dispatch per layer and direction. Parameter names, shapes, gate order (i, f, g, o for LSTM;
r, z, n for GRU), ``state_dict`` keys and initialisation (uniform in +-1/sqrt(hidden_size))
are PyTorch's, so a PyTorch checkpoint loads and gives the same outputs. Inputs are
``[T, B, I]`` (``[B, T, I]`` with ``batch_first``), unbatched ``[T, I]``, or a
:class:`~autograd_compile.nn.utils.rnn.PackedSequence`.

>>> import autograd_compile as acg
>>> lstm = acg.nn.LSTM(4, 8, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(acg.randn(3, 5, 4))
>>> out.shape, h.shape, c.shape
(acg.Size([3, 5, 8]), acg.Size([2, 3, 8]), acg.Size([2, 3, 8]))
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from ..kernels import api as A
from ..kernels import rnn as _rnn
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param
from .module import Module
from .utils.rnn import PackedSequence, pack_index, pad_index

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _check_config(input_size: Any, hidden_size: Any, num_layers: int, bias: Any,
                  batch_first: Any, dropout: Any, proj_size: int) -> None:
    """PyTorch's constructor checks, with its error classes and words."""
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) \
            or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                      f"non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                            f"{type(value).__name__}")
        if kind is int and value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, checks, the loop
    over layers. ``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.

    Several unidirectional layers with no dropout between them (none configured, or eval)
    run as one ``rnn_stack`` op, all layers in one scan (``kernels/rnn.py``); otherwise each
    layer and direction is one ``rnn_layer`` op. ``_wavefront = False`` forces the latter."""

    _wavefront = True

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_config(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                      proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        kw = {"dtype": dtype, "device": device}
        for layer in range(num_layers):
            for direction in range(self._directions):
                self._make_layer(layer, direction, kw)
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _out_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _make_layer(self, layer: int, direction: int, kw: dict) -> None:
        gates, real = _GATES[self.mode] * self.hidden_size, self._out_size
        width = self.input_size if layer == 0 else real * self._directions
        shapes = [("weight_ih_l{}{}", (gates, width)), ("weight_hh_l{}{}", (gates, real))]
        if self.bias:
            shapes += [("bias_ih_l{}{}", (gates,)), ("bias_hh_l{}{}", (gates,))]
        if self.proj_size > 0:
            shapes += [("weight_hr_l{}{}", (self.proj_size, self.hidden_size))]
        suffix = "_reverse" if direction == 1 else ""
        names = [n.format(layer, suffix) for n, _ in shapes]
        for name, (_, shape) in zip(names, shapes):
            setattr(self, name, empty_param(*shape, **kw))
        self._flat_weights_names.extend(names)
        self._all_weights.append(names)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Accepted for PyTorch compatibility: parameters are already laid out for the kernel."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- checks (PyTorch's names and words) ---------------------------------------------------
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        wdt = self._flat_weights[0].dtype
        if input.dtype != wdt:
            raise ValueError(f"RNN input dtype ({_tname(input.dtype)}) does not match weight "
                             f"dtype ({_tname(wdt)}). Convert input: input.to({_tname(wdt)}), "
                             f"or convert model: model.to({_tname(input.dtype)})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None
                                 ) -> tuple[int, int, int]:
        if batch_sizes is not None:
            batch = int(batch_sizes[0].item())
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * self._directions, batch, self._out_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None
                           ) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        return hx if permutation is None else A.index_select(hx, 1, permutation)

    # -- the run --------------------------------------------------------------------------------
    def _zeros(self, batch: int, size: int, like: Tensor) -> Tensor:
        return A.zeros(self.num_layers * self._directions, batch, size, dtype=like.dtype)

    def _layers(self, x: Tensor, hx: Tensor, cx: Tensor | None, lengths: Tensor | None
                ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every layer over time-major ``x [T, B, I]``: (output, h_n, c_n)."""
        if self._wavefront and self.num_layers > 1 and self._directions == 1 and not (
                self.dropout and self.training):
            out, hn, cn, _, _, _ = _rnn.rnn_stack(x, hx, cx, self._flat_weights, lengths,
                                                  self.mode, self.bias, self.proj_size > 0)
            return out, hn, None if cx is None else cn
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self._directions):
                k = layer * self._directions + direction
                w = dict(zip((n.split("_l")[0] for n in self._all_weights[k]), self.all_weights[k]))
                out, hn, cn, _, _ = _rnn.rnn_layer(
                    x, hx[k], None if cx is None else cx[k], w["weight_ih"], w["weight_hh"],
                    w.get("bias_ih"), w.get("bias_hh"), w.get("weight_hr"), lengths, self.mode,
                    direction == 1)
                outs.append(out)
                hs.append(hn)
                cs.append(cn)
            x = outs[0] if len(outs) == 1 else A.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, A.stack(hs, 0), None if cx is None else A.stack(cs, 0)

    def _run(self, input: Any, hx: Any) -> tuple[Any, Any]:
        """The forward shared by RNN, LSTM and GRU (``hx`` a tensor, or LSTM's pair)."""
        lstm = self.mode == "LSTM"
        if isinstance(input, PackedSequence):
            return self._run_packed(input, hx)
        if input.dim() not in (2, 3):
            name = "RNN" if self.mode.startswith("RNN") else self.mode
            extra = " tensor" if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                             f"{extra} instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        hx = self._check_hx_dims(hx, batched)
        batch = input.shape[0] if self.batch_first else input.shape[1]
        h0, c0 = self._initial(hx, batch, input)
        self._check_states(input, h0, c0, None)
        x = input.transpose(0, 1) if self.batch_first else input
        out, hn, cn = self._layers(x, h0, c0, None)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out, hn = out.squeeze(1), hn.squeeze(1)
            cn = None if cn is None else cn.squeeze(1)
        return out, ((hn, cn) if lstm else hn)

    def _check_hx_dims(self, hx: Any, batched: bool) -> Any:
        """PyTorch's checks that hx matches a batched or unbatched input; unsqueezes."""
        want, kind = (3, "batched 3-D") if batched else (2, "unbatched 2-D")
        if hx is None:
            return None
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{hx.dim()}-D tensor")
        return hx if batched else hx.unsqueeze(1)

    def _initial(self, hx: Any, batch: int, like: Tensor) -> tuple[Tensor, Tensor | None]:
        if self.mode != "LSTM":
            return (self._zeros(batch, self.hidden_size, like) if hx is None else hx), None
        if hx is None:
            return (self._zeros(batch, self._out_size, like),
                    self._zeros(batch, self.hidden_size, like))
        return hx[0], hx[1]

    def _check_states(self, input: Tensor, h0: Tensor, c0: Tensor | None,
                      batch_sizes: Tensor | None) -> None:
        if c0 is None:
            self.check_forward_args(input, h0, batch_sizes)
            return
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(h0, expected, "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(c0, expected[:2] + (self.hidden_size,),
                               "Expected hidden[1] size {}, got {}")

    def _run_packed(self, packed: PackedSequence, hx: Any) -> tuple[Any, Any]:
        """Pad (sorted order, time-major), run with per-sequence lengths, pack again."""
        data, batch_sizes, sorted_idx, unsorted_idx = packed
        sizes = np.asarray(batch_sizes.numpy()).astype(np.int64)
        steps, batch = len(sizes), int(sizes[0])
        if hx is not None:
            hx = (tuple(self.permute_hidden(h, sorted_idx) for h in hx)
                  if self.mode == "LSTM" else self.permute_hidden(hx, sorted_idx))
        h0, c0 = self._initial(hx, batch, data)
        self._check_states(data, h0, c0, batch_sizes)
        zero = A.zeros(1, data.shape[1], dtype=data.dtype)
        rows = A.tensor(pad_index(sizes, np.arange(batch), steps, False))
        x = A.index_select(A.cat([data, zero]), 0, rows).reshape(steps, batch, data.shape[1])
        lengths = A.tensor(np.array([(sizes > b).sum() for b in range(batch)], np.int64))
        out, hn, cn = self._layers(x, h0, c0, lengths)
        keep = A.tensor(pack_index(sizes, steps, batch, False))
        out = A.index_select(out.reshape(steps * batch, out.shape[2]), 0, keep)
        packed_out = PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx)
        hn = self.permute_hidden(hn, unsorted_idx)
        if self.mode == "LSTM":
            return packed_out, (hn, self.permute_hidden(cn, unsorted_idx))
        return packed_out, hn


def _tname(dtype: Any) -> str:
    """A dtype as PyTorch prints it (``torch.float32``)."""
    return f"torch.{np.dtype(dtype).name}"


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``;
    ``forward(input, hx=None) -> (output, h_n)``.

    >>> import autograd_compile as acg
    >>> out, h = acg.nn.RNN(3, 5, nonlinearity="relu")(acg.randn(7, 2, 3))
    >>> out.shape, h.shape
    (acg.Size([7, 2, 5]), acg.Size([1, 2, 5]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        super().__init__(modes[self.nonlinearity], *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._run(input, hx)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o); ``proj_size > 0`` projects h (LSTMP).

    ``forward(input, hx=None) -> (output, (h_n, c_n))`` with ``hx = (h_0, c_0)``.

    >>> import autograd_compile as acg
    >>> out, (h, c) = acg.nn.LSTM(3, 6, proj_size=2)(acg.randn(4, 2, 3))
    >>> out.shape, h.shape, c.shape
    (acg.Size([4, 2, 2]), acg.Size([1, 2, 2]), acg.Size([1, 2, 6]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Any, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Any, tuple[Tensor, Tensor]]:
        return self._run(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``).

    >>> import autograd_compile as acg
    >>> out, h = acg.nn.GRU(3, 4, bidirectional=True)(acg.randn(5, 3))
    >>> out.shape, h.shape
    (acg.Size([5, 8]), acg.Size([2, 4]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._run(input, hx)


# -- cells: one step, written as compositions of existing ops ---------------------------------
class RNNCellBase(Module):
    """Parameters ``weight_ih [chunks*H, I]``, ``weight_hh [chunks*H, H]``, ``bias_ih``,
    ``bias_hh``, initialised uniform in +-1/sqrt(hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"dtype": dtype, "device": device}
        self.weight_ih = empty_param(num_chunks * hidden_size, input_size, **kw)
        self.weight_hh = empty_param(num_chunks * hidden_size, hidden_size, **kw)
        if bias:
            self.bias_ih = empty_param(num_chunks * hidden_size, **kw)
            self.bias_hh = empty_param(num_chunks * hidden_size, **kw)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name: str, input: Tensor, states: list[Tensor | None]
                 ) -> tuple[Tensor, list[Tensor], bool]:
        """Batch an unbatched call, fill missing states with zeros, check sizes."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        out = []
        for i, s in enumerate(states):
            if s is None:
                s = A.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            elif not batched:
                s = s.unsqueeze(0)
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                                   f"batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.shape[1]}, "
                                   f"expected {self.hidden_size}")
            out.append(s)
        return input, out, batched

    def _check_state_dims(self, name: str, label: str, state: Tensor | None) -> None:
        if state is not None and state.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {state.dim()}D "
                             f"instead")

    def _gates(self, input: Tensor, hx: Tensor) -> tuple[Tensor, Tensor]:
        return (F.linear(input, self.weight_ih, self.bias_ih),
                F.linear(hx, self.weight_hh, self.bias_hh))


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

    >>> import autograd_compile as acg
    >>> acg.nn.RNNCell(3, 4)(acg.randn(2, 3)).shape
    acg.Size([2, 4])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check_state_dims("RNNCell", "hidden", hx)
        input, (h,), batched = self._prepare("RNNCell", input, [hx])
        gi, gh = self._gates(input, h)
        if self.nonlinearity == "tanh":
            out = (gi + gh).tanh()
        elif self.nonlinearity == "relu":
            out = (gi + gh).relu()
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)) -> (h', c')``.

    >>> import autograd_compile as acg
    >>> h, c = acg.nn.LSTMCell(3, 4)(acg.randn(2, 3))
    >>> h.shape, c.shape
    (acg.Size([2, 4]), acg.Size([2, 4]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        for i, s in enumerate(hx or ()):
            self._check_state_dims("LSTMCell", f"hx[{i}]", s)
        input, (h, c), batched = self._prepare("LSTMCell", input,
                                               [None, None] if hx is None else list(hx))
        gi, gh = self._gates(input, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = (1 - z) * n + z * h``.

    >>> import autograd_compile as acg
    >>> acg.nn.GRUCell(3, 4)(acg.randn(3)).shape
    acg.Size([4])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check_state_dims("GRUCell", "hidden", hx)
        input, (h,), batched = self._prepare("GRUCell", input, [hx])
        gi, gh = self._gates(input, h)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        out = n + z * (h - n)
        return out if batched else out.squeeze(0)
