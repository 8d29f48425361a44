"""PyTorch programs that use torch.distributed, ported by changing only their imports
(issue 24, item 2): 2 processes x 2 host devices over gloo.

- ``_dist_collectives.py``: init_process_group(env://), ReduceOp, all_reduce (also
  async), broadcast, all_gather, all_gather_into_tensor, reduce_scatter_tensor, barrier,
  destroy_process_group on local tensors. Oracle: the same script run by PyTorch itself
  under torchrun with gloo.
- ``_ddp_tutorial.py``: a DDP training script in the style of PyTorch's ddp-tutorial-series
  ``multigpu_torchrun.py`` (Trainer, DistributedSampler.set_epoch, snapshot save and
  resume). Oracle: the same script in one process on the global batch.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import autograd_compile as acg
from _dist_run import HERE, child_env, run_bounded
from test_distributed_launch import launch_run, results

TOL = 1e-5


def port(src: Path, dst: Path) -> Path:
    """``src`` with ``torch`` imports replaced by autograd_compile's; nothing else changes."""
    def line(text: str) -> str:
        if re.match(r"^import torch\s*$", text):
            return "import autograd_compile as torch"
        return re.sub(r"^(import|from) torch\b", r"\1 autograd_compile", text)
    lines = src.read_text().split("\n")
    ported = [line(t) for t in lines]
    changed = [a for a, b in zip(lines, ported) if a != b]
    assert changed and all(re.match(r"^(import|from) torch", a) for a in changed)
    dst.write_text("\n".join(ported))
    return dst


def _torch_results(script: Path) -> dict[int, dict]:
    pytest.importorskip("torch")
    proc = run_bounded([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node",
                        "2", str(script)], 300, cwd=HERE, env=child_env(1))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results(proc.stdout)


@pytest.fixture(scope="module")
def torch_collectives() -> dict[int, dict]:
    return _torch_results(HERE / "_dist_collectives.py")


def test_collectives_on_local_tensors_match_pytorch(tmp_path: Path, torch_collectives):
    script = port(HERE / "_dist_collectives.py", tmp_path / "collectives.py")
    proc, _ = launch_run("--nproc", "2", "--timeout", "120", str(script))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ours = results(proc.stdout)
    assert sorted(ours) == [0, 1] and ours == torch_collectives


@pytest.mark.slow
def test_multiprocessing_spawn_with_init_process_group(tmp_path: Path, torch_collectives):
    from autograd_compile.distributed import launch
    script = port(HERE / "_dist_collectives.py", tmp_path / "collectives.py")
    proc = run_bounded([sys.executable, str(script), "spawn", str(launch.free_port())], 300,
                       cwd=HERE, env=child_env(2))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(ln.split("RESULT ", 1)[1]) for ln in proc.stdout.splitlines()
            if ln.startswith("RESULT ")]
    assert {r["rank"]: r for r in rows} == torch_collectives


def _final(path: Path) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in acg.load(str(path)).items()}


def test_ported_ddp_tutorial_resumes_and_matches_one_process(tmp_path: Path):
    script = port(HERE / "_ddp_tutorial.py", tmp_path / "multigpu_torchrun.py")
    snap, ref = tmp_path / "snapshot.pt", tmp_path / "ref.pt"
    first, _ = launch_run("--nproc", "2", "--timeout", "120", str(script), "4", "1",
                          "--batch_size", "8", "--snapshot", str(snap), "--stop_after", "2")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "[rank 0] Epoch 1 | Training snapshot saved at" in first.stdout
    assert "[rank 1] [RANK1] Epoch 1 | Batchsize: 8 | Steps: 4" in first.stdout
    assert not Path(f"{snap}.final").exists()
    resumed, _ = launch_run("--nproc", "2", "--timeout", "120", str(script), "4", "1",
                            "--batch_size", "8", "--snapshot", str(snap))
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    for rank in (0, 1):
        assert f"[rank {rank}] Resuming training from snapshot at Epoch 2" in resumed.stdout
    assert "Epoch 0 |" not in resumed.stdout and "[rank 0] Epoch 3 | mean loss" in resumed.stdout
    solo, _ = launch_run("--nproc", "1", str(script), "4", "1", "--batch_size", "16",
                         "--snapshot", str(ref))
    assert solo.returncode == 0, solo.stdout[-3000:] + solo.stderr[-3000:]
    got, want = _final(Path(f"{snap}.final")), _final(Path(f"{ref}.final"))
    assert sorted(got) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    start = _final_init(tmp_path)
    for k in want:
        assert np.max(np.abs(got[k] - want[k])) < TOL, k
        assert np.max(np.abs(want[k] - start[k])) > 1e-2, k  # it trained
    # the epoch's mean loss (all_reduce of per-rank sums) is the global batch's
    loss = lambda out, e: re.search(rf"Epoch {e} \| mean loss (\S+)", out).group(1)  # noqa: E731
    assert loss(resumed.stdout, 3) == loss(solo.stdout, 3)


def _final_init(tmp_path: Path) -> dict[str, np.ndarray]:
    """The tutorial model's initial parameters (its load_train_objs seeds 0)."""
    acg.manual_seed(0)
    model = acg.nn.Sequential(acg.nn.Linear(20, 16), acg.nn.Tanh(), acg.nn.Linear(16, 4))
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}
