"""``nn.utils``: gradient clipping and parameter/vector conversion."""
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]
# -- recurrent layers (rnn): packed and padded sequences ------------------------------------------
from . import rnn  # noqa: E402
__all__ += ["rnn"]

# -- [xformer] parametrizations, weight/spectral norm hooks, fusion, skip_init ---------------------
from . import parametrizations, parametrize  # noqa: E402
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: E402
                     fuse_linear_bn_weights, skip_init)
from .weight_norm import (remove_spectral_norm, remove_weight_norm, spectral_norm,  # noqa: E402
                          weight_norm)

__all__ += ["parametrizations", "parametrize", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
            "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init", "remove_spectral_norm",
            "remove_weight_norm", "spectral_norm", "weight_norm"]
# -- the older functional_call home, and pruning -------------------------------------------------
from . import stateless  # noqa: E402

__all__ += ["stateless"]
from . import prune  # noqa: E402

__all__ += ["prune"]
