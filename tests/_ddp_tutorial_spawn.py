"""A DDP training script written the way PyTorch's ddp-tutorial-series writes
``multigpu.py`` (our own text): ``mp.spawn(main, args=(world_size, ...), nprocs=world_size)``,
``ddp_setup(rank, world_size)`` setting ``MASTER_ADDR``/``MASTER_PORT`` and passing rank and
world size to ``init_process_group``, a ``Trainer`` with ``DistributedSampler.set_epoch``.
It is a PyTorch program: test_multiprocessing_spawn_env.py runs it with these imports
replaced by autograd_compile's, and nothing else changed. ``--setup env`` joins instead
with ``init_process_group(backend)`` alone, reading what ``spawn`` put in the environment.

    python _ddp_tutorial_spawn.py 3 --world_size 2 --batch_size 8 --out final.pt
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        g = torch.Generator().manual_seed(4321)
        self.data = [(torch.rand(20, generator=g), torch.rand(1, generator=g))
                     for _ in range(size)]

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup(rank, world_size, port, setup, device):
    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        torch.cuda.set_device(rank)
    if setup == "env":  # spawn's environment: MASTER_ADDR/PORT, WORLD_SIZE, RANK
        init_process_group(backend=backend)
        return
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = port
    init_process_group(backend=backend, rank=rank, world_size=world_size)


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id, device):
        self.gpu_id = gpu_id
        self.device = torch.device(f"cuda:{gpu_id}" if device == "cuda" else "cpu")
        self.model = model.to(self.device)
        self.train_data = train_data
        self.optimizer = optimizer
        self.model = DDP(self.model, device_ids=[gpu_id] if device == "cuda" else None)

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            source = source.to(self.device)
            targets = targets.to(self.device)
            self._run_batch(source, targets)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def load_train_objs():
    train_set = MyTrainDataset(64)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return train_set, model, optimizer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=False,
                      sampler=DistributedSampler(dataset, shuffle=True, seed=3))


def main(rank, world_size, total_epochs, batch_size, port, setup, device, out):
    ddp_setup(rank, world_size, port, setup, device)
    print(f"rank {rank}: RANK={os.environ.get('RANK')} WORLD_SIZE={os.environ.get('WORLD_SIZE')}")
    dataset, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, rank, device)
    trainer.train(total_epochs)
    if rank == 0:
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, out)
    destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("total_epochs", type=int, help="Total epochs to train the model")
    parser.add_argument("--batch_size", default=8, type=int, help="Input batch size on each device")
    parser.add_argument("--world_size", default=2, type=int, help="Processes to spawn")
    parser.add_argument("--port", default="12355", help="MASTER_PORT for ddp_setup")
    parser.add_argument("--setup", default="explicit", choices=["explicit", "env"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", default="final.pt", help="Where rank 0 saves the parameters")
    args = parser.parse_args()
    world_size = args.world_size
    mp.spawn(main, args=(world_size, args.total_epochs, args.batch_size, args.port, args.setup,
                         args.device, args.out), nprocs=world_size)
