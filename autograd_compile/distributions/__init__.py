"""``acg.distributions``: PyTorch's ``torch.distributions`` on our tensors and autograd.

Every family has ``batch_shape``/``event_shape``, ``sample``/``rsample`` (drawing from the
global ``Generator``, so ``acg.manual_seed`` makes draws repeatable), ``log_prob``,
``entropy``, ``mean``/``mode``/``variance``/``stddev``, ``cdf``/``icdf`` where defined,
``expand``, ``arg_constraints``/``support`` and ``validate_args`` with PyTorch's errors.
Reparameterised draws carry gradients into the parameters.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal, kl_divergence
>>> loc = acg.zeros(3, requires_grad=True)
>>> d = Normal(loc, acg.ones(3))
>>> d.rsample((4,)).sum().backward(); loc.grad.tolist()
[4.0, 4.0, 4.0]
"""
from . import constraints, transforms
from .composed import Independent, MixtureSameFamily, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .continuous import (Beta, Cauchy, Chi2, ContinuousBernoulli, Exponential, FisherSnedecor,
                         Gamma, GeneralizedPareto, Laplace, Normal, StudentT, Uniform,
                         VonMises)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                       NegativeBinomial, OneHotCategorical, OneHotCategoricalStraightThrough,
                       Poisson)
from .distribution import Distribution, ExponentialFamily
from .kl import kl_divergence, register_kl
from .multivariate import (Dirichlet, LKJCholesky, LowRankMultivariateNormal,
                           MultivariateNormal, Wishart)
from .transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal, InverseGamma,
                          Kumaraswamy, LogisticNormal, LogitRelaxedBernoulli, LogNormal, Pareto,
                          RelaxedBernoulli, RelaxedOneHotCategorical, Weibull)
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform, CumulativeDistributionTransform, ExpTransform,
                         IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                         PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StackTransform, StickBreakingTransform,
                         TanhTransform, Transform, identity_transform)

__all__ = [
    "ExpRelaxedCategorical", "LogitRelaxedBernoulli",  # torch exports them from their modules
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
    "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
    "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull",
    "Wishart", "biject_to", "constraints", "identity_transform", "kl_divergence",
    "register_kl", "transform_to", "transforms",
]
