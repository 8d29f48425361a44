"""DistributedDataParallel as PyTorch's, for programs joined with init_process_group:
2 processes x 2 host devices, every execution mode, against one process on the global
batch (computed inside ``_dist_torch_ddp.py``)."""
from __future__ import annotations

import pytest

from test_distributed_launch import launch_run, results

TOL = 1e-5


@pytest.fixture(scope="module")
def ranks() -> dict[int, dict]:
    proc, _ = launch_run("--nproc", "2", "--timeout", "120", "_dist_torch_ddp.py", timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = results(proc.stdout)
    assert sorted(out) == [0, 1]
    return out


@pytest.mark.parametrize("mode", ["eager", "compiled-eager", "compiled-jax"])
def test_gradients_averaged_over_processes_equal_the_global_batch(ranks, mode):
    for rank, r in ranks.items():
        assert r[mode] < TOL, (rank, mode, r[mode])


def test_no_sync_accumulates_then_averages(ranks):
    for rank, r in ranks.items():
        assert r["no_sync"] < TOL, (rank, r["no_sync"])


def test_a_parameter_without_gradient_is_an_error_at_the_next_forward(ranks):
    for r in ranks.values():
        assert r["unused"].startswith("Expected to have finished reduction in the prior "
                                      "iteration before starting a new one: 2 parameter(s)")
