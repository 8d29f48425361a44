"""Distributions built from others: ``TransformedDistribution`` (a base pushed through
transforms, the density by change of variables), ``Independent`` (batch dims reinterpreted
as event dims) and ``MixtureSameFamily`` (a categorical mixture of one family's components).

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal, Independent
>>> d = Independent(Normal(acg.zeros(2, 3), acg.ones(2, 3)), 1)
>>> tuple(d.batch_shape), tuple(d.event_shape), tuple(d.log_prob(acg.zeros(2, 3)).shape)
((2,), (3,), (2,))
"""
from __future__ import annotations

from typing import Any

import autograd_compile as acg
from autograd_compile.tensor import Tensor

from . import constraints
from .distribution import Distribution
from .transforms import ComposeTransform, Transform, _sum_rightmost

__all__ = ["Independent", "MixtureSameFamily", "TransformedDistribution"]


class Independent(Distribution):
    """``base_distribution`` with its rightmost ``reinterpreted_batch_ndims`` batch dims
    treated as event dims (log_prob sums over them)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        n = reinterpreted_batch_ndims
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= "
                             f"len(base_distribution.batch_shape), actual {n} vs "
                             f"{len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Independent":
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = acg.Size(batch_shape)
        extra = tuple(self.event_shape[:self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + extra)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return False if self.reinterpreted_batch_ndims > 0 else \
            self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> Any:
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (applied in order); the density by
    change of variables, ``log p(y) = log p(x) - log |dy/dx|``."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms: Any,
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = tuple(transform.forward_shape(base_shape))
        expanded = tuple(transform.inverse_shape(forward_shape))
        if base_shape != expanded:
            base_distribution = base_distribution.expand(expanded[:len(expanded) -
                                                                  base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "TransformedDistribution":
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = acg.Size(batch_shape)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        old = tuple(self.batch_shape)
        for name, value in self.__dict__.items():
            # a subclass's own parameters (Gumbel's loc ...) follow the new batch shape
            if isinstance(value, Tensor) and tuple(value.shape[:len(old)]) == old:
                value = value.expand(tuple(batch_shape) + tuple(value.shape[len(old):]))
            new.__dict__.setdefault(name, value)
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> Any:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        with acg.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """Change of variables: the base density at ``t.inv(y)`` minus each log-Jacobian."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                 event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """A decreasing transform turns the cdf into a survival function."""
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for t in self.transforms[::-1]:
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


class MixtureSameFamily(Distribution):
    """A mixture: a ``Categorical`` picks one of the components along the component
    distribution's rightmost batch dim."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Any, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        from .discrete import Categorical
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "MixtureSameFamily":
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component, new._event_ndims = self._num_component, self._event_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> Any:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Any:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _pad(self, x: Tensor) -> Tensor:
        """A value broadcast against the components: a dim for them before the event dims."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_ndims, cat_ndims = len(self.batch_shape), len(self.mixture_distribution.batch_shape)
        pad = 0 if cat_ndims == 1 else dist_ndims - cat_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad + xs[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        spread = self.component_distribution.mean - self._pad(self.mean)
        return mean_cond_var + (probs * spread * spread).sum(dim)

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix = acg.nn.functional.log_softmax(self.mixture_distribution.logits, dim=-1)
        return (log_prob_x + log_mix).logsumexp(-1)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        with acg.no_grad():
            sample_len, batch_len = len(tuple(sample_shape)), len(self.batch_shape)
            gather_dim = sample_len + batch_len
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.expand(mix_shape + (1,) + tuple(es))
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n"
                f"  {self.component_distribution})")
