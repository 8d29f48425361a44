"""Backward-throughput benchmarks for autograd_compile (``python -m autograd_compile bench``).

Modules: :mod:`.run` (command line and methodology), :mod:`.workloads` (the models),
:mod:`.frameworks` (each model's functions in autograd_compile, JAX and PyTorch),
:mod:`.systems` (the ways of running a backward), :mod:`.measure` (timing and
gradient checks), :mod:`.sweep` (captures and compiles over batch sizes),
:mod:`.xla_trap` (the CPU fusion flag, in subprocesses) and :mod:`.report` (table,
JSON, plot).
"""
