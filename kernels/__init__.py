"""The operator library: every op defined once (schema, JAX kernel, shape rule, backward)."""
from . import core  # noqa: F401  (importing registers the ops)
