"""config: the XLA CPU flag is added only where it is safe and wanted."""
from __future__ import annotations

from autograd_compile import config


def test_xla_cpu_fix_adds_the_flag_when_unset(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("ACG_XLA_CPU_FIX", raising=False)
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.10.2")
    assert config.apply_xla_cpu_fix() is True
    import os
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_experimental_ynn_fusion_type=-reduce"


def test_xla_cpu_fix_never_overrides_the_user(monkeypatch):
    import os
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type=none --foo")
    assert config.apply_xla_cpu_fix() is False
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_experimental_ynn_fusion_type=none --foo"
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    monkeypatch.setenv("ACG_XLA_CPU_FIX", "0")
    assert config.apply_xla_cpu_fix() is False and os.environ["XLA_FLAGS"] == "--foo"


def test_xla_cpu_fix_keeps_other_flags_and_skips_unverified_jaxlib(monkeypatch):
    import os
    monkeypatch.delenv("ACG_XLA_CPU_FIX", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.11.0")
    assert config.apply_xla_cpu_fix() is False and os.environ["XLA_FLAGS"] == "--foo"
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.10.9")
    assert config.apply_xla_cpu_fix() is True
    assert os.environ["XLA_FLAGS"] == "--foo --xla_cpu_experimental_ynn_fusion_type=-reduce"
