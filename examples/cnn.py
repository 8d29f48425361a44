"""A small convolutional classifier, written the way a PyTorch user writes one.

    python examples/cnn.py --steps 100 --mode compiled
    python -m autograd_compile demo --model cnn

Conv2d + BatchNorm2d + ReLU + MaxPool2d twice, Dropout, two Linear layers, trained with
SGD (momentum) and a StepLR schedule on synthetic 12x12 images: each class is a bright
bar at its own position and orientation, under noise and a random shift. A
post-accumulate-grad hook logs gradient norms.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import autograd_compile as torch
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from autograd_compile.utils.data import DataLoader, TensorDataset

try:  # run as a script (python examples/cnn.py) or imported as a package module
    from .gpt import GradNormLogger, backward_context
except ImportError:
    from gpt import GradNormLogger, backward_context

SIZE, CLASSES = 12, 4


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 3 * 3, 32)
        self.fc2 = nn.Linear(32, CLASSES)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = self.dropout(torch.flatten(x, 1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def make_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """[n, 1, SIZE, SIZE] float images and their labels (a bar per class, shifted, noisy)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, size=n)
    images = rng.normal(0.0, 0.3, size=(n, 1, SIZE, SIZE)).astype(np.float32)
    for i, c in enumerate(labels):
        dy, dx = rng.integers(-1, 2, size=2)
        lo, hi = 3 + dy, 9 + dy
        if c == 0:
            images[i, 0, 4 + dy, 3 + dx:9 + dx] += 1.5  # horizontal bar, top
        elif c == 1:
            images[i, 0, 8 + dy, 3 + dx:9 + dx] += 1.5  # horizontal bar, bottom
        elif c == 2:
            images[i, 0, lo:hi, 4 + dx] += 1.5  # vertical bar, left
        else:
            images[i, 0, lo:hi, 8 + dx] += 1.5  # vertical bar, right
    return images, labels.astype(np.int64)


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(dim=1) == y).sum().item())
            total += len(y)
    model.train()
    return correct / total


def main(steps: int = 60, mode: str = "eager", batch_size: int = 32, seed: int = 0,
         lr: float = 0.05, log_every: int = 0) -> dict:
    """Train for ``steps`` steps; returns losses, step times, final parameters, accuracy."""
    torch.manual_seed(seed)
    x, y = make_images(512, seed)
    train = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=batch_size,
                       shuffle=True, drop_last=True)  # shuffled from the global seed
    tx, ty = make_images(256, seed + 1)
    test = DataLoader(TensorDataset(torch.tensor(tx), torch.tensor(ty)), batch_size=128)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(steps // 3, 1),
                                                gamma=0.5)
    grads = GradNormLogger(model)
    criterion = nn.CrossEntropyLoss()
    losses, step_times, grad_norms = [], [], []
    batches = _forever(train)
    for step in range(steps):
        start = time.perf_counter()
        data, target = next(batches)
        optimizer.zero_grad()
        loss = criterion(model(data), target)
        with backward_context(mode):
            loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        step_times.append(time.perf_counter() - start)
        grad_norms.append(grads.total_norm())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}  grad norm {grad_norms[-1]:.3f}  "
                  f"lr {scheduler.get_last_lr()[0]:.3f}  {step_times[-1] * 1e3:.1f} ms")
    return {"losses": losses, "step_times": step_times, "grad_norms": grad_norms,
            "hook_calls": grads.calls, "model": model, "accuracy": evaluate(model, test),
            "params": {n: p.detach().numpy() for n, p in model.named_parameters()},
            "buffers": {n: b.numpy() for n, b in model.named_buffers()}}


def _forever(loader: DataLoader):
    while True:
        yield from loader


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--mode", default="compiled",
                    choices=["eager", "compiled", "compiled-jax", "compiled-eager"])
    args = ap.parse_args()
    result = main(args.steps, args.mode, log_every=max(args.steps // 10, 1))
    later = result["step_times"][5:] or result["step_times"]
    print(f"test accuracy {result['accuracy']:.3f} (chance {1 / CLASSES:.2f}); "
          f"median step {1e3 * statistics.median(later):.1f} ms")
