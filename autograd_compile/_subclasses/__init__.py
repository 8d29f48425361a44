"""PyTorch's ``torch._subclasses`` import path (``fake_tensor``), for ported code."""
