"""acg.utils.data: datasets, samplers, DataLoader and default_collate against NumPy."""
from __future__ import annotations

import collections
import math

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.kernels.factories import Generator
from autograd_compile.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                         DistributedSampler, IterableDataset, RandomSampler,
                                         SequentialSampler, Subset, TensorDataset,
                                         default_collate, default_convert, random_split)


def _xy(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return x, TensorDataset(acg.tensor(x), acg.arange(n))


def test_tensor_dataset_and_sequential_loader():
    x, ds = _xy()
    assert len(ds) == 10 and ds[2][0].tolist() == x[2].tolist() and ds[2][1].item() == 2
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and loader.dataset is ds and len(batches) == 3
    for i, (bx, by) in enumerate(batches):
        np.testing.assert_array_equal(bx.detach().numpy(), x[4 * i: 4 * i + 4])
        assert by.tolist() == list(range(4 * i, min(4 * i + 4, 10)))
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)][-1] == [4, 5,
                                                                                       6, 7]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(acg.ones(3), acg.ones(4))


def test_tensor_dataset_fast_path_equals_sample_by_sample_collate():
    ds = TensorDataset(acg.randn(9, 2, 3), acg.arange(9), acg.randn(9).to(acg.bfloat16))
    fast = list(DataLoader(ds, batch_size=4, sampler=[8, 0, 3, 3, 5, 1, 2]))
    slow = list(DataLoader(ds, batch_size=4, sampler=[8, 0, 3, 3, 5, 1, 2],
                           collate_fn=lambda b: default_collate(b)))
    assert len(fast) == len(slow) == 2
    for fb, sb in zip(fast, slow):
        assert isinstance(fb, list) and isinstance(sb, list)
        for f, s in zip(fb, sb):
            assert f.dtype == s.dtype and f.shape == s.shape
            np.testing.assert_array_equal(np.asarray(f), np.asarray(s))


def test_shuffle_is_a_permutation_reproducible_by_manual_seed():
    _, ds = _xy(12)

    def epoch_orders(loader, epochs=2):
        return [sum((y.tolist() for _, y in loader), []) for _ in range(epochs)]
    acg.manual_seed(3)
    first = epoch_orders(DataLoader(ds, batch_size=5, shuffle=True))
    acg.manual_seed(3)
    again = epoch_orders(DataLoader(ds, batch_size=5, shuffle=True))
    assert first == again
    assert all(sorted(o) == list(range(12)) for o in first)
    assert first[0] != first[1] and first[0] != list(range(12))
    g1, g2 = Generator(7), Generator(7)
    acg.manual_seed(0)
    a = epoch_orders(DataLoader(ds, batch_size=5, shuffle=True, generator=g1), 1)
    acg.manual_seed(99)
    b = epoch_orders(DataLoader(ds, batch_size=5, shuffle=True, generator=g2), 1)
    assert a == b  # a given generator, not the global seed, decides the order


def test_random_sampler_with_replacement():
    acg.manual_seed(0)
    draws = list(RandomSampler(range(4), replacement=True, num_samples=50))
    assert len(draws) == 50 and set(draws) <= {0, 1, 2, 3} and len(set(draws)) == 4
    more = list(RandomSampler(range(4), num_samples=10))
    assert len(more) == 10 and sorted(more[:4]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        RandomSampler([])
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_sampler_with_replacement_draws_lazily():
    """minGPT's trainer asks for 1e10 samples and takes a few batches: nothing may be drawn
    up front, and the draws stay uniform over the chunks."""
    import itertools
    acg.manual_seed(0)
    huge = RandomSampler(range(5), replacement=True, num_samples=int(1e10))
    assert len(huge) == int(1e10)
    draws = list(itertools.islice(iter(huge), 20_000))
    counts = np.bincount(draws, minlength=5)
    assert counts.sum() == 20_000 and np.all(np.abs(counts / 20_000 - 0.2) < 0.02)
    loader = DataLoader(range(5), batch_size=4, sampler=huge)
    assert len(next(iter(loader))) == 4


Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_like_pytorch():
    batch = default_collate([{"t": acg.ones(2), "a": np.zeros((2, 2), np.float32), "f": 1.5,
                              "i": 3, "b": True, "s": "u", "n": np.float32(2.0),
                              "p": Point(1, 2.0), "tup": (1, 2), "lst": [1.0, 2.0]},
                             {"t": acg.zeros(2), "a": np.ones((2, 2), np.float32), "f": 2.5,
                              "i": 4, "b": False, "s": "v", "n": np.float32(3.0),
                              "p": Point(3, 4.0), "tup": (5, 6), "lst": [3.0, 4.0]}])
    assert batch["t"].tolist() == [[1, 1], [0, 0]] and batch["t"].dtype == acg.float32
    np.testing.assert_array_equal(batch["a"].detach().numpy(), np.stack([np.zeros((2, 2)),
                                                                np.ones((2, 2))]))
    assert batch["f"].dtype == acg.float64 and batch["f"].tolist() == [1.5, 2.5]
    assert batch["i"].dtype == acg.int64 and batch["b"].dtype == acg.bool
    assert batch["s"] == ["u", "v"] and batch["n"].dtype == acg.float32
    assert isinstance(batch["p"], Point) and batch["p"].x.tolist() == [1, 3]
    assert isinstance(batch["tup"], list) and batch["tup"][0].tolist() == [1, 5]
    assert batch["lst"][1].tolist() == [2.0, 4.0]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict) and od["a"].tolist() == [1, 2]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_no_auto_batching_converts_each_sample():
    ds = [np.arange(2), np.arange(2) + 1]
    out = list(DataLoader(ds, batch_size=None))
    assert [o.tolist() for o in out] == [[0, 1], [1, 2]] and isinstance(out[0], acg.Tensor)
    assert default_convert(("s", 1)) == ["s", 1]  # a tuple comes back a list, as in PyTorch


def test_batch_sampler_and_custom_collate():
    _, ds = _xy(6)
    loader = DataLoader(ds, batch_sampler=[[5, 0], [1]], collate_fn=lambda b: [s[1].item()
                                                                              for s in b])
    assert list(loader) == [[5, 0], [1]] and len(loader) == 2
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)) == [[0, 1], [2, 3]]


def test_loader_argument_errors():
    _, ds = _xy(4)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                                         "got batch_size=0"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    assert len(list(DataLoader(ds, batch_size=2, num_workers=2, pin_memory=True))) == 2


def test_empty_dataset():
    empty = TensorDataset(acg.ones(0, 2))
    loader = DataLoader(empty, batch_size=2)
    assert len(loader) == 0 and list(loader) == []
    with pytest.raises(ValueError, match="num_samples=0"):
        DataLoader(empty, batch_size=2, shuffle=True)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert len(DataLoader(Stream(5), batch_size=2, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2, drop_last=True)] == [
        [0, 1], [2, 3]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]


def test_subset_concat_and_base_dataset():
    _, ds = _xy(6)
    sub = Subset(ds, [4, 1])
    assert len(sub) == 2 and sub[0][1].item() == 4 and [s[1].item() for s in
                                                        sub.__getitems__([1, 0])] == [1, 4]
    cat = ds + sub
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert cat[6][1].item() == 4 and cat[-1][1].item() == 1 and cat[5][1].item() == 5
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-9]
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]


def test_random_split():
    acg.manual_seed(0)
    parts = random_split(range(10), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    acg.manual_seed(0)
    assert list(random_split(range(10), [3, 7])[0]) == list(parts[0])
    a = random_split(range(10), [0.5, 0.5], generator=Generator(1))
    b = random_split(range(10), [0.5, 0.5], generator=Generator(1))
    assert list(a[0]) == list(b[0])
    # floors 2, 2, 1 of 7: the remainder 2 goes round-robin from the first split
    assert [len(p) for p in random_split(range(7), [0.4, 0.4, 0.2])] == [3, 3, 1]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False),
                                                  (12, 4, False)])
def test_distributed_sampler_partition(n, replicas, drop_last):
    shares = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
              for r in range(replicas)]
    per_rank = (n // replicas) if drop_last else math.ceil(n / replicas)
    assert all(len(s) == per_rank for s in shares)
    order = list(range(n))
    padded = (order * math.ceil(per_rank * replicas / n))[:per_rank * replicas]
    for r, share in enumerate(shares):  # rank r takes every replicas-th index from r
        assert share == padded[r::replicas]
    if drop_last:
        assert len(set(sum(shares, []))) == per_rank * replicas


def test_distributed_sampler_epochs_and_errors():
    ranks = [DistributedSampler(range(9), 2, r, seed=5) for r in range(2)]
    e0 = [list(s) for s in ranks]
    for s in ranks:
        s.set_epoch(1)
    e1 = [list(s) for s in ranks]
    assert e0 != e1
    for shares in (e0, e1):
        assert set(shares[0] + shares[1]) == set(range(9))
    assert e0 == [list(DistributedSampler(range(9), 2, r, seed=5)) for r in range(2)]
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    if not acg.distributed.is_initialized():
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            DistributedSampler(range(4))


def test_distributed_sampler_reads_rank_and_world_size_from_acg_distributed(monkeypatch):
    dist = acg.distributed
    if not dist.is_initialized():
        dist.init()  # one process: world size 1, rank 0
        try:
            assert list(DistributedSampler(range(5), shuffle=False)) == [0, 1, 2, 3, 4]
        finally:
            dist.destroy_process_group()
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 3)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 1)
    s = DistributedSampler(range(7), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (3, 1, [1, 4, 0])


def test_training_loop_over_a_loader(mode):
    """SGD over shuffled mini-batches from the loader equals the same loop on numpy batches."""
    x, _ = _xy(8)
    y = x.sum(1, keepdims=True) * 0.1
    ds = TensorDataset(acg.tensor(x), acg.tensor(y))
    w = acg.nn.Parameter(acg.zeros(3, 1))
    opt = acg.optim.SGD([w], lr=1e-3)
    acg.manual_seed(4)
    # as PyTorch's, each loader iterator first draws its workers' base seed, then the sampler's
    order = sum([(acg.default_generator.next_key(), list(RandomSampler(ds)))[1]
                 for _ in range(2)], [])
    acg.manual_seed(4)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    ref = np.zeros((3, 1))
    for epoch in range(2):
        for i, (bx, by) in enumerate(loader):
            idx = order[8 * epoch + 4 * i: 8 * epoch + 4 * i + 4]
            np.testing.assert_array_equal(bx.detach().numpy(), x[idx])
            opt.zero_grad()
            loss = ((bx @ w - by) ** 2).mean()
            with mode():
                loss.backward()
            opt.step()
            ref = ref - 1e-3 * 2 * x[idx].T @ (x[idx] @ ref - y[idx]) / 4
    np.testing.assert_allclose(w.detach().numpy(), ref, rtol=1e-5)


def test_docstring_examples_run():
    import doctest

    from autograd_compile.utils.data import _collate, dataloader, dataset, distributed, sampler
    for m in (acg.utils.data, dataset, sampler, dataloader, distributed, _collate):
        result = doctest.testmod(m)
        assert result.failed == 0 and result.attempted > 0, m.__name__
