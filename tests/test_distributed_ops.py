"""Every op on global arrays that span processes: 2 processes x 2 host devices over gloo.

The README's DDP example (cross_entropy on a sharded target) used to fail: eager checks
that read values (class-target bounds) fetched the whole global array. The oracle for
every loss of ``nn.functional``, an accuracy metric, ``clip_grad_norm_`` and the
optimizers is the same model run by one process on the global batch (computed inside
``_dist_ops.py``).
"""
from __future__ import annotations

import pytest

from test_distributed_launch import launch_run, results

TOL = 1e-5
LOSSES = ["cross_entropy", "cross_entropy_smooth_weight", "cross_entropy_probs", "nll_loss",
          "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
          "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
          "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
          "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
          "multi_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
          "triplet_margin_with_distance_loss", "ctc_loss"]
FAST = ["eager/SGD", "compiled-eager/Adam", "compiled-jax/AdamW"]  # the rest: slow
ALL = [f"{m}/{o}" for m in ("eager", "compiled-eager", "compiled-jax")
       for o in ("SGD", "Adam", "AdamW")]


def _run(*train: str) -> dict[int, dict]:
    proc, _ = launch_run("--nproc", "2", "--timeout", "120", "_dist_ops.py", *train,
                         timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[Gloo]" not in proc.stdout  # quiet by default (test_distributed_quiet.py)
    ranks = results(proc.stdout)
    assert sorted(ranks) == [0, 1]
    return ranks


@pytest.fixture(scope="module")
def ranks() -> dict[int, dict]:
    return _run(*FAST)


def test_every_functional_loss_is_covered():
    from autograd_compile.nn import functional as F
    names = {n for n in dir(F) if n.endswith("_loss") and not n.startswith("_")}
    names |= {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
              "kl_div"}
    assert names <= set(LOSSES)


@pytest.mark.parametrize("name", LOSSES)
def test_loss_across_processes_equals_one_process(ranks, name):
    for rank, r in ranks.items():
        got = r["losses"][name]
        assert (r["world"], r["devices"]) == (2, 4)
        # loss.item() on every rank: the global batch's loss (a replicated global array)
        assert got["spans"] and got["replicated"], (rank, got)
        assert abs(got["loss"] - got["ref"]) < TOL * max(1.0, abs(got["ref"])), (rank, got)
        assert got["grads"] < TOL, (rank, got)


def test_metrics_and_host_reads_across_processes(ranks):
    for rank, r in ranks.items():
        reads = r["reads"]
        assert reads["accuracy"] == reads["accuracy_ref"]
        assert reads["correct"] == reads["correct_ref"]
        assert reads["format"] == reads["format_ref"]
        assert abs(reads["none_sum"] - reads["none_sum_ref"]) < TOL * abs(reads["none_sum_ref"])
        assert reads["one_hot"] == reads["one_hot_ref"]
        # a per-sample loss stays split over the processes: reading it asks to reduce first
        assert "cannot call tolist() on a tensor of shape (8,) split over 2 processes" \
            in reads["none_tolist"] and "Reduce it to one value" in reads["none_tolist"]
        assert "cannot acg.save" in reads["none_save"], reads["none_save"]
        assert "a tensor of shape (8,) split over 2 processes" in reads["none_save"]


def test_a_bad_target_is_reported_by_the_rank_that_holds_it(ranks):
    for rank, r in ranks.items():
        assert f"Target {7 + rank} is out of bounds (classes: 4)" in r["reads"]["bad_target"]


@pytest.mark.parametrize("run", FAST)
def test_optimizers_with_clip_grad_norm_across_processes(ranks, run):
    for rank, r in ranks.items():
        got = r["train"][run]
        assert got["clipped"] and got["params"] < TOL and got["norms"] < TOL, (rank, run, got)


@pytest.mark.slow
def test_every_mode_and_optimizer_across_processes():
    rest = [run for run in ALL if run not in FAST]
    for rank, r in _run("train-only", *rest).items():
        for run in rest:
            got = r["train"][run]
            assert got["params"] < TOL and got["norms"] < TOL, (rank, run, got)


README_PRELUDE = '''
import numpy as np
import autograd_compile as acg


class MyModel(acg.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = acg.nn.Sequential(acg.nn.Linear(4, 16), acg.nn.ReLU(), acg.nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


class Points(acg.utils.data.Dataset):  # items made on demand: no tensor before dist.init()
    def __init__(self):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((256, 4)).astype(np.float32)
        self.y = (self.x[:, 0] > 0).astype(np.int64) + (self.x[:, 1] > 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return acg.tensor(self.x[i]), acg.tensor(self.y[i])


dataset = Points()
'''


def test_readme_ddp_example_verbatim_on_two_processes(tmp_path):
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = readme.index("```python\nimport autograd_compile as acg\nimport "
                         "autograd_compile.distributed as dist\n")
    block = readme[start + len("```python\n"):readme.index("```", start + 10)]
    assert "F.cross_entropy" in block or "functional.cross_entropy(model(x), dist.shard(y" \
        in block
    script = tmp_path / "readme_ddp.py"
    script.write_text(README_PRELUDE + block + "print('RESULT {\"rank\": %d, \"loss\": %r}' % "
                      "(dist.get_rank(), loss.item()))\n")
    proc, _ = launch_run("--nproc", "2", "--timeout", "120", str(script), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = results(proc.stdout)
    assert sorted(ranks) == [0, 1]
    # the last step's loss over the global batch: the same value on both ranks
    assert ranks[0]["loss"] == ranks[1]["loss"] and 0 < ranks[0]["loss"] < 2
