"""The torch twin of _data_workers_helpers.Shard, for torch's own DataLoader workers."""
from __future__ import annotations

import torch.utils.data as tud


class TorchShard(tud.IterableDataset):
    def __init__(self, n: int, shard: bool = True) -> None:
        self.n, self.shard = n, shard

    def __iter__(self):
        info = tud.get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self) -> int:
        return self.n
