"""Training beyond one device on JAX's distributed runtime (DESIGN §10)."""
