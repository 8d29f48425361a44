"""``acg.nn.modules``: every module class, under PyTorch's ``torch.nn.modules`` paths
(``torch.nn.modules.rnn.LSTM``, ``.linear.Linear``...): each submodule re-exports the
classes of ``acg.nn`` that PyTorch keeps there (generated from torch's layout)."""
from . import (  # noqa: F401
    activation, adaptive, batchnorm, channelshuffle, container, conv, distance, dropout, flatten,
    fold, instancenorm, lazy, linear, linear_cross_entropy_options, loss, module, normalization,
    padding, pixelshuffle, pooling, rnn, sparse, transformer, upsampling, utils)
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .linear_cross_entropy_options import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from ..parameter import Parameter  # noqa: F401,E402  (as the old acg.nn.modules had it)
