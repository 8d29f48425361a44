"""The cost of the value checks in compiled programs (``runtime_checks``) on the GPT
example's training step: the same model and batches, checks on and off, interleaved in
one process (each round re-traces with the setting, then times the warm steps).

    python -m benchmarks.checks_cost --variant compile   # acg.compile(model) + compiled backward
    python -m benchmarks.checks_cost --variant ca        # eager forward + compiled backward
"""
from __future__ import annotations

import argparse
import statistics
import time

import autograd_compile as acg
from autograd_compile import runtime_checks
from autograd_compile.examples import gpt


def measure(variant: str, rounds: int = 6, steps: int = 40, warm: int = 10) -> dict[bool, list]:
    """Median step time (ms) per round, for checks on (True) and off (False)."""
    acg.manual_seed(0)
    data = gpt.CharData(gpt.DATA.read_text(), 0)
    model = gpt.GPT(gpt.GPTConfig(vocab_size=len(data.chars)))
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    batches = [data.batch(16, model.config.block_size) for _ in range(8)]
    result: dict[bool, list] = {True: [], False: []}
    prev = runtime_checks.enabled()
    try:
        for _ in range(rounds):
            for flag in (True, False):
                runtime_checks.set_enabled(flag)
                acg.compiled_autograd.reset()
                acg.aot.reset()
                fwd = acg.compile(model) if variant == "compile" else model
                times = []
                for step in range(steps):
                    x, y = batches[step % len(batches)]
                    start = time.perf_counter()
                    _, loss = fwd(x, y)
                    opt.zero_grad(set_to_none=True)
                    with acg.compiled_autograd.enable("jax"):
                        loss.backward()
                    opt.step()
                    loss.item()
                    times.append(time.perf_counter() - start)
                result[flag].append(statistics.median(times[warm:]) * 1e3)
    finally:
        runtime_checks.set_enabled(prev)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=["compile", "ca"], default="compile")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    res = measure(args.variant, args.rounds)
    for flag in (True, False):
        print(f"{args.variant} checks={'on' if flag else 'off'}: "
              f"{' '.join(f'{t:.2f}' for t in res[flag])} ms; min {min(res[flag]):.2f}, "
              f"median {statistics.median(res[flag]):.2f}")
    print(f"cost (min vs min): {min(res[True]) / min(res[False]) - 1:+.1%}")


if __name__ == "__main__":
    main()
