"""The operator library: every op defined once (schema, JAX kernel, shape rule, backward).

Importing registers the ops, module by module (each block: schema, kernel, shape rule,
backward formula); :mod:`.api` is the Python surface over them.
"""
from . import factories, elementwise, indexing, reductions, shape, linalg, nn  # noqa: F401
