"""A DDP training script written the way PyTorch's ddp-tutorial-series writes
``multigpu_torchrun.py`` (our own text): a ``Trainer`` class, ``DistributedSampler`` with
``set_epoch``, a snapshot saved by rank 0 and resumed from, ``init_process_group`` /
``destroy_process_group``. It is a PyTorch program: test_distributed_torch_style.py runs
it with these imports replaced by autograd_compile's, and nothing else changed.

    torchrun --nproc_per_node 2 _ddp_tutorial.py 4 1 --batch_size 8 --snapshot s.pt
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.distributed as dist
from torch.distributed import init_process_group, destroy_process_group


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        g = torch.Generator().manual_seed(1234)
        self.data = [(torch.rand(20, generator=g), int(torch.randint(0, 4, (1,), generator=g)))
                     for _ in range(size)]

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup(device):
    if device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl" if device == "cuda" else "gloo", init_method="env://")


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path, device):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.device = torch.device(f"cuda:{self.local_rank}" if device == "cuda" else "cpu")
        self.model = model.to(self.device)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            print("Loading snapshot")
            self._load_snapshot(snapshot_path)
        ids = [self.local_rank] if device == "cuda" else None
        self.model = DDP(self.model, device_ids=ids, output_device=ids and ids[0])

    def _load_snapshot(self, snapshot_path):
        snapshot = torch.load(snapshot_path, map_location=self.device)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.optimizer.load_state_dict(snapshot["OPTIMIZER_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[RANK{self.global_rank}] Epoch {epoch} | Batchsize: {b_sz} | "
              f"Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        total = torch.zeros(2, device=self.device)
        for source, targets in self.train_data:
            source = source.to(self.device)
            targets = targets.to(self.device)
            loss = self._run_batch(source, targets)
            total += torch.stack([loss.detach() * len(targets), torch.tensor(len(targets))])
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        if self.global_rank == 0:
            print(f"Epoch {epoch} | mean loss {(total[0] / total[1]).item():.6f}")

    def _save_snapshot(self, epoch):
        snapshot = {
            "MODEL_STATE": self.model.module.state_dict(),
            "OPTIMIZER_STATE": self.optimizer.state_dict(),
            "EPOCHS_RUN": epoch + 1,
        }
        torch.save(snapshot, self.snapshot_path)
        print(f"Epoch {epoch} | Training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0 and (epoch + 1) % self.save_every == 0:
                self._save_snapshot(epoch)
            dist.barrier()  # the others wait until the snapshot is written


def load_train_objs():
    train_set = MyTrainDataset(64)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    return train_set, model, optimizer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=False,
                      sampler=DistributedSampler(dataset, shuffle=True, seed=7, drop_last=False))


def main(save_every, total_epochs, batch_size, snapshot_path, device, stop_after):
    ddp_setup(device)
    assert dist.is_available() and dist.is_initialized()
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}")
    dataset, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, save_every, snapshot_path, device)
    trainer.train(min(total_epochs, stop_after))
    if dist.get_rank() == 0 and stop_after >= total_epochs:
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()},
                   snapshot_path + ".final")
    destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("total_epochs", type=int, help="Total epochs to train the model")
    parser.add_argument("save_every", type=int, help="How often to save a snapshot")
    parser.add_argument("--batch_size", default=8, type=int, help="Input batch size on each device")
    parser.add_argument("--snapshot", default="snapshot.pt", help="Where the snapshot goes")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--stop_after", default=10 ** 9, type=int, help="Epochs this run trains")
    args = parser.parse_args()
    main(args.save_every, args.total_epochs, args.batch_size, args.snapshot, args.device,
         args.stop_after)
