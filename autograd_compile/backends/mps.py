"""``acg.backends.mps``: Apple's Metal backend does not exist under JAX here.

>>> import autograd_compile as acg
>>> acg.backends.mps.is_available()
False
"""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
