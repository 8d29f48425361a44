"""PyTorch's path ``torch.nn.modules.upsampling``: the same classes as ``acg.nn``."""
from ..upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401

__all__ = ['Upsample', 'UpsamplingBilinear2d', 'UpsamplingNearest2d']
