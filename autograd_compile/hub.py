"""``torch.hub``: pretrained weights by URL, and models from a repository's ``hubconf.py``.

Downloads land where PyTorch puts them (``$TORCH_HOME/hub``, default
``~/.cache/torch/hub``), so a checkpoint PyTorch already fetched is read from there, and
``acg.load`` reads PyTorch's files. ``load(..., source="local")`` imports a directory's
``hubconf.py``; ``source="github"`` first downloads the repository as PyTorch does.

>>> import os, tempfile, autograd_compile as acg
>>> d = tempfile.mkdtemp()
>>> acg.save({"w": acg.ones(2)}, os.path.join(d, "w.pt"))
>>> acg.hub.load_state_dict_from_url("file://" + os.path.join(d, "w.pt"),
...                                  model_dir=os.path.join(d, "cache"), progress=False)
{'w': tensor([1., 1.])}
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from typing import Any, Callable

from . import serialization

_hub_dir: str | None = None
_HASH = re.compile(r"-([a-f0-9]*)\.")  # "resnet18-f37072fd.pth": the sha256's first digits


def get_dir() -> str:
    """Where downloads go: ``set_dir``'s, else ``$TORCH_HOME/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    cache = os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    home = os.path.expanduser(os.environ.get("TORCH_HOME", os.path.join(cache, "torch")))
    return os.path.join(home, "hub")


def set_dir(d: str | os.PathLike) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to ``dst`` (through a temporary file: a broken download leaves no
    ``dst``); with ``hash_prefix``, the file's sha256 must start with it."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    sha = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".download_")
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "autograd-compile"})
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request) as src:
            total, done = src.headers.get("Content-Length"), 0
            for chunk in iter(lambda: src.read(1 << 16), b""):
                out.write(chunk)
                sha.update(chunk)
                done += len(chunk)
                if progress:
                    _progress(done, total)
        if progress:
            sys.stderr.write("\n")
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                               f'"{sha.hexdigest()}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _progress(done: int, total: str | None) -> None:
    shown = f"{done / 2 ** 20:.1f} MB" + (f" / {int(total) / 2 ** 20:.1f} MB" if total else "")
    sys.stderr.write(f"\r{shown}")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = False) -> Any:
    """The object saved at ``url`` (a state dict, usually), downloaded once into
    ``model_dir`` (default ``get_dir()/checkpoints``) and loaded with ``acg.load``."""
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        if progress:
            sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        found = _HASH.search(name) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress)
    if zipfile.is_zipfile(cached) and _legacy_zip(cached):
        cached = _unzip_legacy(cached, model_dir)
    return serialization.load(cached, map_location=map_location, weights_only=weights_only)


def _legacy_zip(path: str) -> bool:
    """A zip holding one checkpoint file (old releases), not a checkpoint in zip format."""
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        return len(names) == 1 and "/" not in names[0]


def _unzip_legacy(path: str, model_dir: str) -> str:
    with zipfile.ZipFile(path) as z:
        inner = z.namelist()[0]
        z.extractall(model_dir)
    return os.path.join(model_dir, inner)


# -- models from a repository's hubconf.py ---------------------------------------------------
def _repo_dir(repo_or_dir: str, source: str, force_reload: bool, verbose: bool) -> str:
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    owner, rest = repo_or_dir.split("/", 1)
    name, _, ref = rest.partition(":")
    ref = ref or "main"
    target = os.path.join(get_dir(), f"{owner}_{name}_{ref.replace('/', '_')}")
    if force_reload or not os.path.isdir(target):
        archive = target + ".zip"
        if verbose:
            sys.stderr.write(f"Downloading: \"https://github.com/{owner}/{name}/zipball/{ref}\" "
                             f"to {archive}\n")
        download_url_to_file(f"https://github.com/{owner}/{name}/zipball/{ref}", archive,
                             progress=False)
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            z.extractall(get_dir())
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(os.path.join(get_dir(), top), target)
        os.remove(archive)
    return target


def _hubconf(repo_dir: str) -> Any:
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"Cannot find hubconf.py in {repo_dir}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)  # hubconf imports the repository's own modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    return module


def _entry(hubconf: Any, model: str) -> Callable:
    fn = getattr(hubconf, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = None, verbose: bool = True, source: str = "github") -> Any:
    """The entry points (public callables) of a repository's ``hubconf.py``."""
    hub = _hubconf(_repo_dir(github, source, force_reload, verbose))
    return [n for n in dir(hub) if callable(getattr(hub, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo: Any = None, source: str = "github") -> str:
    """An entry point's docstring."""
    return _entry(_hubconf(_repo_dir(github, source, force_reload, False)), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = None, force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """``model(*args, **kwargs)`` from the repository's ``hubconf.py`` ("owner/repo[:ref]"
    on GitHub, or a directory with ``source="local"``)."""
    hub = _hubconf(_repo_dir(repo_or_dir, source, force_reload, verbose))
    return _entry(hub, model)(*args, **kwargs)


__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]
