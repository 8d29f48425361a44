"""PyTorch's ``torch.fx.experimental`` import paths, so ported code imports unchanged:
``proxy_tensor`` (``make_fx``) and ``symbolic_shapes`` (``ShapeEnv``, ``SymInt``...). Both
live in :mod:`autograd_compile.tracing`; these modules are their PyTorch-named doors."""
