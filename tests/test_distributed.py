"""acg.distributed: init/rank contract in-process; placement on 8 host devices in a subprocess."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.distributed as dist
from _dist_run import run_script


@pytest.fixture
def single_process():
    dist.init()
    yield
    dist.destroy_process_group()


def test_rank_before_init_raises_like_pytorch():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_world_size()


def test_single_process_init(single_process):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    dist.barrier()
    with pytest.raises(RuntimeError, match="twice"):
        dist.init()


def test_init_needs_a_coordinator_for_several_processes():
    with pytest.raises(ValueError, match="coordinator"):
        dist.init(num_processes=2, process_id=0)
    with pytest.raises(ValueError, match="process_id"):
        dist.init("localhost:1", num_processes=2, process_id=5)
    acg.ones(1).sum().item()  # jax's runtime is running in this process now
    with pytest.raises(RuntimeError, match="before any tensor"):
        dist.init("localhost:1", num_processes=2, process_id=1)
    assert not dist.is_initialized()


def test_all_reduce_single_process_is_identity(single_process):
    t = acg.tensor([1.0, -2.0])
    for op in ("sum", "mean", "max", dist.ReduceOp.MIN):
        assert dist.all_reduce(t, op=op).tolist() == [1.0, -2.0]
    with pytest.raises(ValueError, match="unknown op"):
        dist.all_reduce(t, op="median")


def test_device_mesh_shape_errors():
    with pytest.raises(ValueError, match="holds 3 devices"):
        dist.device_mesh(shape=(3,))
    with pytest.raises(ValueError, match="axis_names"):
        dist.device_mesh(("a", "b"), shape=(1,))


def test_placement_on_eight_devices_survives_eager_ops():
    r = run_script("_dist_placement.py", devices=8)
    assert r["mesh"] == {"data": 8} and r["world"] == [0, 1]
    np.testing.assert_array_equal(np.asarray(r["x"]), np.asarray(r["xn"], np.float32))
    specs = r["specs"]
    sharded = "8:['data', None]"
    inplace = [n for n in specs if n.startswith("inplace")]  # copy_, add_, zero_
    assert len(inplace) == 3
    for name in ("x", "y", "ones_like", "zeros_like", "full_like", "scalar", "mixed", *inplace):
        assert specs[name] == sharded, (name, specs[name])
    for name in ("w", "w.grad", "loss"):
        assert specs[name] == "8:[]", (name, specs[name])
    assert "size 10 of dim 0" in r["error"] and "mesh(data=8)" in r["error"]
    assert r["metric"] == [1.0, 5.0]
    assert r["same"]
    # a batch that does not divide over the mesh, through DDP's forward
    assert "size 12 of dim 0" in r["ddp_error"] and "8 devices of mesh(data=8)" in r["ddp_error"]
