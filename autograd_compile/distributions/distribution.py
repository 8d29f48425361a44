"""The ``Distribution`` base: shapes, sampling, argument and sample validation, and
``ExponentialFamily`` (entropy from the log-normaliser by autograd).

A distribution has a ``batch_shape`` (independent parameterisations side by side) and an
``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape`` and ``log_prob`` reduces the event dims.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal
>>> d = Normal(acg.zeros(3), acg.ones(3))
>>> tuple(d.sample((2,)).shape), tuple(d.batch_shape), tuple(d.event_shape)
((2, 3), (3,), ())
"""
from __future__ import annotations

import warnings
from typing import Any

import autograd_compile as acg
from autograd_compile.tensor import Tensor

from . import constraints
from ._checks import require
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Distribution", "ExponentialFamily"]


class Distribution:
    """Base class of every probability distribution (PyTorch's ``torch.distributions``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions check their arguments and samples by default."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = acg.Size(), event_shape: Any = acg.Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = acg.Size(batch_shape)
        self._event_shape = acg.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_args()

    def _check_args(self) -> None:
        """PyTorch's ValueError for a parameter outside its constraint."""
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue  # a lazily derived parameter was valid where it came from
            value = getattr(self, param)
            require(constraint.check(value), self, [value], _param_message(param, constraint))

    # -- shapes ----------------------------------------------------------------------------
    @property
    def batch_shape(self) -> acg.Size:
        return self._batch_shape

    @property
    def event_shape(self) -> acg.Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = acg.Size()) -> acg.Size:
        """``sample_shape + batch_shape + event_shape``."""
        if not isinstance(sample_shape, acg.Size):
            sample_shape = acg.Size(sample_shape)
        return acg.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Distribution":
        """A new distribution with parameters expanded to ``batch_shape`` (no copy): every
        tensor attribute (parameters and derived values, batch dims first) is expanded."""
        new = self._get_checked_instance(self._family(), _instance)
        batch_shape = acg.Size(batch_shape)
        old = len(self.batch_shape)
        for name, value in self.__dict__.items():
            # a tensor led by the batch dims (parameters and derived values) is expanded;
            # others (a shared temperature ...) are kept as they are
            if isinstance(value, Tensor) and tuple(value.shape[:old]) == tuple(self.batch_shape):
                value = value.expand(tuple(batch_shape) + tuple(value.shape[old:]))
            elif isinstance(value, Distribution):
                value = value.expand(tuple(batch_shape) + tuple(value.batch_shape[old:]))
            new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _family(self) -> type:
        """The library class this one derives from: a user subclass with its own __init__
        must define its own expand (as in PyTorch, whose families each define expand)."""
        for cls in type(self).__mro__:
            if cls.__module__.startswith(__name__.rsplit(".", 1)[0]):
                return cls
        return type(self)

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # -- what families provide ---------------------------------------------------------------
    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with acg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        """A reparameterised draw: gradients flow back to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(acg.Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    # -- validation ----------------------------------------------------------------------------
    def _validate_sample(self, value: Any) -> None:
        """PyTorch's errors for a value of the wrong type, shape or outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.dim() - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{acg.Size(value.shape)} vs {self._event_shape}.")
        actual = acg.Size(value.shape)
        expected = acg.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          f"validation. Please initialize the distribution with "
                          f"`validate_args=False` to turn off validation.")
            return
        require(support.check(value), self, [value], _value_message(support))

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        def show(value: Tensor) -> Any:  # a number for one element, else the shape
            return value if value.numel() == 1 else acg.Size(value.shape)
        args = ", ".join(f"{p}: {show(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"


def _param_message(param: str, constraint: Any) -> Any:
    def message(dist: Distribution, value: Tensor) -> str:
        return (f"Expected parameter {param} ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {dist!r} to satisfy the constraint "
                f"{constraint!r}, but found invalid values:\n{value}")
    return message


def _value_message(support: Any) -> Any:
    def message(dist: Distribution, value: Tensor) -> str:
        return (f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {dist!r}, but found invalid values:\n{value}")
    return message


class ExponentialFamily(Distribution):
    """A distribution whose density is ``exp(<t(x), theta> - F(theta) + k(x))``: families
    provide the natural parameters ``theta`` and the log-normaliser ``F``; the entropy
    (Bregman divergence of F) comes from its gradient."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``, the gradient by autograd."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with acg.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = acg.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


class _Validating(Distribution):
    """``_check(value)``: validate a sample when validation is on."""

    def _check(self, value: Tensor) -> None:
        if self._validate_args:
            self._validate_sample(value)


class _BinaryProbs:
    """A two-outcome family given ``probs`` or ``logits``: the other is derived on first
    use, as PyTorch's ``lazy_property`` does. Put it first among the bases."""

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)


class _BinaryParams(_BinaryProbs):
    """:class:`_BinaryProbs` whose given parameter is kept as ``_param`` (``param_shape``)."""

    @property
    def param_shape(self) -> acg.Size:
        return self._param.size()
