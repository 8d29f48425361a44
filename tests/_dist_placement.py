"""8 host devices, one process: placement survives eager ops; errors name size and mesh."""
from __future__ import annotations

import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from _dist_run import emit


def spec(t: acg.Tensor) -> str:
    """'devices:[axis per dim]' (trailing Nones dropped by jax)."""
    s = t._data.sharding
    return f"{len(s.device_set)}:{[a for a in getattr(s, 'spec', ())]}"


def main() -> None:
    dist.init()
    mesh = dist.device_mesh()
    xn = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    x = dist.shard(acg.tensor(xn), mesh)
    w = dist.replicate(acg.ones(4, 3, requires_grad=True), mesh)
    y = x @ w
    loss = y.tanh().sum()
    loss.backward()
    specs = {"x": spec(x), "w": spec(w), "y": spec(y), "loss": spec(loss), "w.grad":
             spec(w.grad), "ones_like": spec(acg.ones_like(x)), "zeros_like":
             spec(acg.zeros_like(x)), "full_like": spec(acg.full_like(x, 2.0)),
             "scalar": spec(x * 2.0 + 1), "mixed": spec(x + acg.ones(4))}
    expected_grad = xn.T @ (1 - np.tanh(xn @ np.ones((4, 3), np.float32)) ** 2)
    np.testing.assert_allclose(w.grad.numpy(), expected_grad, rtol=1e-5, atol=1e-5)
    try:
        dist.shard(acg.ones(10, 2), mesh)
        error = None
    except ValueError as e:
        error = str(e)
    inplace = dist.shard(acg.ones(8, 2), mesh)
    with acg.no_grad():
        for step in (lambda: inplace.copy_(acg.zeros(8, 2)), lambda: inplace.add_(acg.ones(2)),
                     lambda: inplace.zero_()):
            step()
            specs[f"inplace{len(specs)}"] = spec(inplace)
    again = dist.shard(x, mesh)  # already placed: the same tensor back
    ddp = acg.nn.parallel.DistributedDataParallel(acg.nn.Linear(2, 1), mesh)
    try:
        ddp(acg.ones(12, 2))
        ddp_error = None
    except ValueError as e:
        ddp_error = str(e)
    metric = dist.all_reduce(acg.tensor([1.0, 5.0]), op="max").tolist()
    emit(specs=specs, error=error, ddp_error=ddp_error, same=again is x, metric=metric, world=[dist.get_rank(), dist.get_world_size()],
         mesh=dict(mesh.shape), x=x.detach().numpy().tolist(), xn=xn.tolist())


if __name__ == "__main__":
    main()
