"""The persistent compile cache across processes (ACG_CACHE_DIR).

Each case runs fresh Python processes on a temporary cache directory: the suite itself
runs with the cache off (conftest.py), so nothing here touches the user's home.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from autograd_compile import compile_cache

# A small acg.compile'd step whose JAX cache events the child counts and prints.
_CHILD = textwrap.dedent("""
    import json
    import jax.monitoring as mon
    counts = {"hits": 0, "writes": 0, "requests": 0}
    names = {"/jax/compilation_cache/cache_hits": "hits",
             "/jax/compilation_cache/cache_misses": "writes",
             "/jax/compilation_cache/compile_requests_use_cache": "requests"}
    mon.register_event_listener(lambda e, **k: counts.__setitem__(names[e], counts[names[e]] + 1)
                                if e in names else None)
    import autograd_compile as acg
    acg.manual_seed(0)
    model = acg.nn.Sequential(acg.nn.Linear(5, 7), acg.nn.Tanh(), acg.nn.Linear(7, 3))
    step = acg.compile(model)
    x = acg.arange(20, dtype=acg.float32).reshape(4, 5) / 10
    loss = step(x).square().sum()
    with acg.compiled_autograd.enable("jax"):
        loss.backward()
    info = acg.compile_cache.info()
    print(json.dumps({"counts": counts, "loss": loss.item(),
                      "grad": model[0].weight.grad.tolist(),
                      "enabled": info["enabled"], "dir": info["dir"], "owner": info["owner"],
                      "entries": info["entries"], "bytes": info["bytes"]}))
""")


def _env(cache_dir: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    return env | {"ACG_CACHE_DIR": cache_dir, "JAX_PLATFORMS": "cpu"} | extra


def _run(cache_dir: str, **extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=_env(cache_dir, **extra),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # the default run checks the same through test_two_processes_at_once...
def test_second_process_hits_the_cache(tmp_path):
    cold = _run(str(tmp_path))
    assert cold["enabled"] and cold["owner"] == "acg"
    assert cold["dir"] == str(tmp_path / "xla")
    # (a cold process may hit its own fresh entry when two functions lower to one program)
    assert cold["counts"]["writes"] > 0 and cold["counts"]["hits"] < cold["counts"]["requests"]
    assert 0 < cold["entries"] <= cold["counts"]["writes"]
    warm = _run(str(tmp_path))
    # every program the second process needs comes from disk; nothing new is written
    assert warm["counts"]["hits"] == warm["counts"]["requests"] > 0
    assert warm["counts"]["writes"] == 0
    assert warm["entries"] == cold["entries"]
    # and the loaded programs compute what the compiled ones did
    assert warm["loss"] == cold["loss"] and warm["grad"] == cold["grad"]


def test_two_processes_at_once_on_an_empty_cache(tmp_path):
    cmd = [sys.executable, "-c", _CHILD]
    procs = [subprocess.Popen(cmd, env=_env(str(tmp_path)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "persistent compilation cache" not in err  # no read/write error warnings
    a, b = (json.loads(o.strip().splitlines()[-1]) for o, _ in outs)
    assert a["loss"] == b["loss"] and a["grad"] == b["grad"]
    assert a["counts"]["writes"] + b["counts"]["writes"] > 0
    # a third process finds a complete, readable cache: every program from disk, no writes
    third = _run(str(tmp_path))
    assert third["counts"]["hits"] == third["counts"]["requests"] > 0
    assert third["counts"]["writes"] == 0 and third["entries"] == max(a["entries"], b["entries"])
    assert third["loss"] == a["loss"] and third["grad"] == a["grad"]


def test_empty_cache_dir_disables(tmp_path):
    out = _run("", HOME=str(tmp_path))
    assert not out["enabled"] and out["dir"] is None
    assert out["counts"]["hits"] == out["counts"]["writes"] == 0
    assert not any(tmp_path.rglob("*-cache"))  # nothing written under the (fake) home


def test_default_dir_is_under_home(tmp_path):
    env = {k: v for k, v in _env("").items() if k != "ACG_CACHE_DIR"}
    code = "import autograd_compile as acg; print(acg.compile_cache.info()['dir'])"
    out = subprocess.run([sys.executable, "-c", code], env=env | {"HOME": str(tmp_path)},
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == str(tmp_path / ".cache" / "autograd_compile" / "xla")


@pytest.mark.slow
def test_size_bound_evicts(tmp_path):
    bound_mb = 0.02  # ~20 KB: smaller than the programs of one step
    out = _run(str(tmp_path), ACG_CACHE_MAX_MB=str(bound_mb))
    assert out["counts"]["writes"] > out["entries"] > 0  # some entries were evicted
    assert out["bytes"] <= bound_mb * 2**20


@pytest.mark.slow
def test_user_jax_cache_dir_is_kept(tmp_path):
    mine = tmp_path / "mine"
    out = _run(str(tmp_path / "ours"), JAX_COMPILATION_CACHE_DIR=str(mine))
    assert out["owner"] == "user" and out["dir"] == str(mine)
    assert not (tmp_path / "ours").exists()


def test_prune_keeps_the_newest(tmp_path):
    for i in range(5):
        f = tmp_path / f"k{i}-cache"
        f.write_bytes(b"x" * 100)
        os.utime(f, (1000 + i, 1000 + i))
    assert compile_cache.prune(tmp_path, 250) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k3-cache", "k4-cache"]


def test_bad_size_names_the_variable(monkeypatch):
    monkeypatch.setenv("ACG_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="ACG_CACHE_MAX_MB"):
        compile_cache._env_number("ACG_CACHE_MAX_MB", 1.0)


def test_file_cache_reads_whole_entries_while_others_write(tmp_path):
    """Writers and readers at once: a read gives a whole entry or none, never a part."""
    import hashlib
    import threading
    cache = compile_cache.FileCache(tmp_path, 2**30)
    values = {f"k{i}": hashlib.sha256(str(i).encode()).digest() * (2000 + 500 * i)
              for i in range(8)}
    bad: list[str] = []

    def write() -> None:
        for _ in range(5):
            for k, v in values.items():
                cache.put(k, v)

    def read() -> None:
        for _ in range(200):
            for k, v in values.items():
                got = cache.get(k)
                if got is not None and got != v:
                    bad.append(k)

    threads = [threading.Thread(target=f) for f in (write, write, read, read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    assert {k: cache.get(k) for k in values} == values
    assert not list(tmp_path.glob("*.tmp"))  # no temporary file is left behind


def test_file_cache_prunes_least_recently_used(tmp_path):
    cache = compile_cache.FileCache(tmp_path, 1000)
    for i in range(3):
        cache.put(f"k{i}", bytes(300))
        os.utime(tmp_path / f"k{i}-cache", (100 + i, 100 + i))
    assert cache.get("k0") == bytes(300)  # a hit makes k0 the most recently used
    cache.put("k3", bytes(300))  # 1200 > 1000: prune to 900, oldest first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k0-cache", "k2-cache", "k3-cache"]
    cache.put("huge", bytes(2000))  # larger than the bound: not written at all
    assert not (tmp_path / "huge-cache").exists()
