"""Run under the launcher: every loss of nn.functional on global arrays spanning processes.

Each rank feeds its rows of one global batch through a DDP model; the oracle is the same
model run in this process on the whole batch on one device. For every loss: the value
``loss.item()`` reads on each rank and the parameter gradients. Also: an accuracy
metric, ``reduction="none"`` (split over processes: ``.tolist()`` must refuse, ``.sum()``
reads), data-dependent host reads (``one_hot`` with ``num_classes=-1``), a bad class
target caught by the rank that holds it, and a few steps of SGD/Adam/AdamW with
``clip_grad_norm_`` in every execution mode.
"""
from __future__ import annotations

import io
import os
import sys
from typing import Any, Callable

import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from _dist_run import emit, mode_ctx

BATCH, C = 8, 4  # global batch; 2 processes x 2 devices: 2 rows per device


def global_data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    sign = np.where(rng.random((BATCH, C)) < 0.5, -1.0, 1.0).astype(np.float32)
    multilabel = np.full((BATCH, C), -1, np.int64)
    multilabel[:, 0] = rng.integers(0, C, BATCH)
    multilabel[::2, 1] = (multilabel[::2, 0] + 1) % C
    return dict(
        x=rng.standard_normal((BATCH, 4)).astype(np.float32),
        cls=rng.integers(0, C, BATCH).astype(np.int64),
        y=rng.standard_normal((BATCH, C)).astype(np.float32),
        y2=rng.standard_normal((BATCH, C)).astype(np.float32),
        p=rng.random((BATCH, C)).astype(np.float32),
        q=rng.dirichlet(np.ones(C), BATCH).astype(np.float32),
        counts=rng.poisson(2.0, (BATCH, C)).astype(np.float32),
        var=(0.5 + rng.random((BATCH, C))).astype(np.float32),
        sign=sign, sign1=sign[:, 0].copy(), labels01=(sign > 0).astype(np.float32),
        multilabel=multilabel,
        ctc_targets=rng.integers(1, C, (BATCH, 2)).astype(np.int64),
        in_len=np.full(BATCH, 3, np.int64), tgt_len=np.full(BATCH, 2, np.int64))


def _ctc(z: acg.Tensor, t: dict) -> acg.Tensor:
    log_probs = acg.stack([z, 0.5 * z, -z]).log_softmax(2)  # (T=3, N, C)
    return F.ctc_loss(log_probs, t["ctc_targets"], t["in_len"], t["tgt_len"])


LOSSES: dict[str, Callable[[acg.Tensor, dict], acg.Tensor]] = {
    "cross_entropy": lambda z, t: F.cross_entropy(z, t["cls"]),
    "cross_entropy_smooth_weight": lambda z, t: F.cross_entropy(
        z, t["cls"], weight=acg.tensor([1.0, 2.0, 0.5, 1.0]), label_smoothing=0.1),
    "cross_entropy_probs": lambda z, t: F.cross_entropy(z, t["q"]),
    "nll_loss": lambda z, t: F.nll_loss(z.log_softmax(1), t["cls"]),
    "mse_loss": lambda z, t: F.mse_loss(z, t["y"]),
    "l1_loss": lambda z, t: F.l1_loss(z, t["y"]),
    "smooth_l1_loss": lambda z, t: F.smooth_l1_loss(z, t["y"], beta=0.5),
    "huber_loss": lambda z, t: F.huber_loss(z, t["y"], delta=0.5),
    "binary_cross_entropy": lambda z, t: F.binary_cross_entropy(z.sigmoid(), t["p"]),
    "binary_cross_entropy_with_logits": lambda z, t: F.binary_cross_entropy_with_logits(
        z, t["p"], pos_weight=acg.tensor([1.0, 2.0, 1.0, 0.5])),
    "kl_div": lambda z, t: F.kl_div(z.log_softmax(1), t["q"], reduction="batchmean"),
    "poisson_nll_loss": lambda z, t: F.poisson_nll_loss(z, t["counts"]),
    "gaussian_nll_loss": lambda z, t: F.gaussian_nll_loss(z, t["y"], t["var"]),
    "hinge_embedding_loss": lambda z, t: F.hinge_embedding_loss(z, t["sign"]),
    "margin_ranking_loss": lambda z, t: F.margin_ranking_loss(z[:, 0], z[:, 1], t["sign1"],
                                                              margin=0.1),
    "soft_margin_loss": lambda z, t: F.soft_margin_loss(z, t["sign"]),
    "multilabel_soft_margin_loss": lambda z, t: F.multilabel_soft_margin_loss(z, t["labels01"]),
    "multilabel_margin_loss": lambda z, t: F.multilabel_margin_loss(z, t["multilabel"]),
    "multi_margin_loss": lambda z, t: F.multi_margin_loss(z, t["cls"]),
    "cosine_embedding_loss": lambda z, t: F.cosine_embedding_loss(z[:, :2], z[:, 2:],
                                                                  t["sign1"]),
    "triplet_margin_loss": lambda z, t: F.triplet_margin_loss(z, t["y"], t["y2"]),
    "triplet_margin_with_distance_loss": lambda z, t: F.triplet_margin_with_distance_loss(
        z, t["y"], t["y2"], distance_function=lambda a, b: (a - b).abs().sum(1)),
    "ctc_loss": _ctc,
}


def make_model() -> acg.nn.Module:
    acg.manual_seed(0)
    return acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, C))


def rows(a: np.ndarray, rank: int, world: int) -> np.ndarray:
    part = BATCH // world
    return a[rank * part:(rank + 1) * part]


def grads(model: acg.nn.Module) -> dict[str, np.ndarray]:
    return {n: p.grad.numpy() for n, p in model.named_parameters()}  # replicated: readable


def diff(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k])))) for k in a)


def losses(rank: int, world: int) -> dict:
    """Every loss: the value each rank reads and the gradients, against one process."""
    data = global_data()
    ref_model, model = make_model(), make_model()
    ddp = DDP(model)
    full = {k: acg.tensor(v) for k, v in data.items()}
    mine = {k: dist.shard(acg.tensor(rows(v, rank, world)), ddp.mesh) for k, v in data.items()}
    out = {}
    for name, fn in LOSSES.items():
        ref_model.zero_grad()
        model.zero_grad()
        ref = fn(ref_model(full["x"]), full)
        ref.backward()
        loss = fn(ddp(acg.tensor(rows(data["x"], rank, world))), mine)
        loss.backward()
        out[name] = dict(loss=loss.item(), ref=ref.item(), grads=diff(grads(model),
                                                                      grads(ref_model)),
                         spans=not loss._data.is_fully_addressable,
                         replicated=loss._data.is_fully_replicated)
    return out


def reads(rank: int, world: int) -> dict:
    """Host reads a training loop makes on global tensors."""
    data = global_data()
    ref_model, model = make_model(), make_model()
    ddp = DDP(model)
    cls = dist.shard(acg.tensor(rows(data["cls"], rank, world)), ddp.mesh)
    z = ddp(acg.tensor(rows(data["x"], rank, world)))
    z_ref, cls_ref = ref_model(acg.tensor(data["x"])), acg.tensor(data["cls"])
    out: dict[str, Any] = {}
    out["accuracy"] = (z.argmax(1) == cls).float().mean().item()
    out["accuracy_ref"] = (z_ref.argmax(1) == cls_ref).float().mean().item()
    out["correct"] = int((z.argmax(1) == cls).sum())
    out["correct_ref"] = int((z_ref.argmax(1) == cls_ref).sum())
    out["format"] = f"{F.cross_entropy(z, cls):.5f}"
    out["format_ref"] = f"{F.cross_entropy(z_ref, cls_ref):.5f}"
    each = F.cross_entropy(z, cls, reduction="none")
    out["none_sum"] = each.sum().item()
    out["none_sum_ref"] = F.cross_entropy(z_ref, cls_ref, reduction="none").sum().item()
    try:
        each.tolist()
        out["none_tolist"] = "no error"
    except RuntimeError as e:
        out["none_tolist"] = str(e)
    try:
        acg.save({"each": each.detach()}, io.BytesIO())
        out["none_save"] = "no error"
    except RuntimeError as e:
        out["none_save"] = str(e)
    out["one_hot"] = F.one_hot(cls).sum(0).tolist()  # num_classes from the global max
    out["one_hot_ref"] = F.one_hot(cls_ref).sum(0).tolist()
    bad = rows(data["cls"], rank, world).copy()
    bad[-1] = 7 + rank  # each rank holds one bad class: the rank that holds it says so
    try:
        F.cross_entropy(z, dist.shard(acg.tensor(bad), ddp.mesh))
        out["bad_target"] = "no error"
    except Exception as e:  # noqa: BLE001 - the text is the test's
        out["bad_target"] = f"{type(e).__name__}: {e}"
    return out




def train(rank: int, world: int, mode: str, opt_name: str) -> dict:
    """Three steps with clip_grad_norm_: DDP over the processes against one process."""
    data = global_data()
    out = {}
    for who in ("ddp", "ref"):
        model = make_model()
        net = DDP(model) if who == "ddp" else model
        opt = dict(SGD=lambda p: acg.optim.SGD(p, lr=0.1, momentum=0.9),
                   Adam=lambda p: acg.optim.Adam(p, lr=0.05),
                   AdamW=lambda p: acg.optim.AdamW(p, lr=0.05))[opt_name](model.parameters())
        norms = []
        for step in range(3):
            x, cls = np.roll(data["x"], step, 0), np.roll(data["cls"], step, 0)
            if who == "ddp":
                x, target = rows(x, rank, world), dist.shard(acg.tensor(rows(cls, rank, world)),
                                                             net.mesh)
            else:
                target = acg.tensor(cls)
            loss = F.cross_entropy(net(acg.tensor(x)), target)
            opt.zero_grad()
            with mode_ctx(mode):
                loss.backward()
            norms.append(acg.nn.utils.clip_grad_norm_(model.parameters(), 0.5).item())
            opt.step()
        out[who] = dict(params={n: p.detach().numpy() for n, p in model.named_parameters()},
                        norms=norms)
    return dict(params=diff(out["ddp"]["params"], out["ref"]["params"]),
                norms=float(np.max(np.abs(np.subtract(out["ddp"]["norms"],
                                                      out["ref"]["norms"])))),
                clipped=max(out["ref"]["norms"]) > 0.5)


def main() -> None:
    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"])
    result: dict[str, Any] = dict(rank=rank, world=world, devices=dist.device_mesh().size)
    args = sys.argv[1:]
    if args[:1] == ["train-only"]:  # the slow test: only the optimizer runs
        args = args[1:]
    else:
        result["losses"] = losses(rank, world)
        result["reads"] = reads(rank, world)
    runs = args or [f"{m}/{o}" for m in ("eager", "compiled-eager", "compiled-jax")
                            for o in ("SGD", "Adam", "AdamW")]
    result["train"] = {run: train(rank, world, *run.split("/")) for run in runs}
    emit(**result)


if __name__ == "__main__":
    main()
