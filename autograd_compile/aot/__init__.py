"""Compiled forward (``acg.compile``): trace, partition forward and backward, run each as one XLA program."""
