"""Losses that own a projection: ``AdaptiveLogSoftmaxWithLoss`` (Grave et al., 2016) and
``LinearCrossEntropyLoss`` (a linear layer fused with cross-entropy).

Adaptive softmax here evaluates every cluster for every row and gathers the target's
log-probability: the values and gradients are PyTorch's (rows get no gradient from clusters
their target is not in), and the shapes never depend on the targets, so the module runs the
same eagerly, under compiled autograd and under ``acg.compile``.

>>> import autograd_compile as acg
>>> asm = acg.nn.AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 8])
>>> out = asm(acg.randn(3, 16), acg.tensor([0, 5, 9]))
>>> out.output.shape, out.loss.shape, asm.log_prob(acg.randn(3, 16)).shape
(acg.Size([3]), acg.Size([]), acg.Size([3, 10]))
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, Sequence

from ..kernels import api as _api
from ..tensor import Tensor
from . import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from ._loss_functional import concrete
from .loss import _WeightedLoss
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Head: the ``cutoffs[0]`` most frequent classes plus one logit per tail cluster; tail
    cluster i: in_features -> in_features // div_value**(i+1) -> its classes. Returns
    ``(output, loss)``: each target's log-probability and their negated mean."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check(self, input: Tensor, target: Tensor) -> None:
        if target.dim() == 1:
            if input.shape[0] != target.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if (target.numel() and concrete(target)  # a value check: eager only
                and bool(((target < 0) | (target >= self.n_classes)).any())):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        self._check(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        output = self.log_prob(input).gather(1, target.reshape(-1, 1)).reshape(-1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, 1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = F.log_softmax(tail(input), 1)
            pieces.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _api.cat(pieces, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` classes, [N, n_classes]."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row (``log_prob(input).argmax(1)``)."""
        return self.log_prob(input).argmax(1)


@dataclass
class LinearCrossEntropyOptions:
    """PyTorch's chunking policy for :class:`LinearCrossEntropyLoss`; accepted, and without
    effect on the result (the loss here is one linear and one fused cross-entropy)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross_entropy(linear(input), target) with the linear layer owned by the loss
    (parameters ``linear.weight`` [C * prod(out_features), in_features], ``linear.bias``)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device: Any = None, dtype: Any = None,
                 reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        shape = (self.num_classes, *self.out_features)
        w = self.linear.weight.reshape(shape + (self.linear.in_features,))
        b = self.linear.bias.reshape(shape) if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
