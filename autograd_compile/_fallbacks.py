"""Install the per-key fallbacks each layer owns (modes, subclasses, autograd, fake)."""
from __future__ import annotations

from .autograd.derivatives import autograd_fallback
from .dispatch.keys import DispatchKey
from .dispatch.library import Library
from .tracing.fake import fake_fallback
from .modes import python_key_fallback, python_mode_fallback

CORE = Library("_", "FRAGMENT")
CORE.fallback(python_mode_fallback, DispatchKey.PythonMode, debug="modes.python_mode_fallback")
CORE.fallback(python_key_fallback, DispatchKey.Python, debug="modes.python_key_fallback")
CORE.fallback(autograd_fallback, DispatchKey.Autograd, debug="autograd.autograd_fallback")
CORE.fallback(fake_fallback, DispatchKey.Fake, debug="fake.fake_fallback")
