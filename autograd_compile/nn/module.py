"""``nn.Module``: PyTorch's module contract (registries, naming, state dicts, hooks).

>>> import autograd_compile as acg
>>> class Net(acg.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = acg.nn.Linear(3, 2)
...         self.register_buffer("steps", acg.zeros(()))
...     def forward(self, x):
...         return self.fc(x)
>>> net = Net()
>>> [n for n, _ in net.named_parameters()], list(net.state_dict())
(['fc.weight', 'fc.bias'], ['steps', 'fc.weight', 'fc.bias'])

Parameters, buffers and submodules live in ``_parameters``, ``_buffers`` and
``_modules`` (ordered dicts), not in ``__dict__``: ``__setattr__`` routes each
assignment to its registry and ``__getattr__`` reads them back.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator, Mapping

from ..autograd.grad_mode import no_grad
from ..kernels._dtypes import as_dtype, is_float
from ..kernels.api import zeros_like
from ..devices import as_device
from ..tensor import HookDict, RemovableHandle, Tensor
from ..tracing.fake import MetaTensor
from ._backward_hook import BackwardHook
from .parameter import Parameter

__all__ = ["Module"]

_ABSENT = object()
_SCALARS = (bool, int, float, complex, str, type(None))
_TOKENS: dict[tuple, int] = {}  # interned snapshots: equal values, equal token
_NEXT_TOKEN = iter(range(1, 1 << 62))


def plain_value(v: Any) -> bool:
    """A value a trace bakes in as a constant (``self.temperature``, ``self.p``, a shape):
    a Python scalar, or a tuple of them."""
    return isinstance(v, _SCALARS) or (isinstance(v, tuple) and all(isinstance(x, _SCALARS)
                                                                       for x in v))


def same_value(a: Any, b: Any) -> bool:
    """Equal values of one type (``1``, ``1.0`` and ``True`` are three constants); NaN
    equals NaN."""
    return type(a) is type(b) and (a == b or a != a and b != b)


def plain_token(d: dict) -> int:
    """A small int naming the plain-valued attributes of a module's ``__dict__`` (their
    names, types and values): ``acg.compile`` keeps it in its signature, so changing
    ``model.drop.p`` or ``model.temperature`` retraces as torch.compile's guards would,
    and setting a value back finds the earlier trace again."""
    snap = tuple([(k, type(v), v) for k, v in d.items()
                  if k != "training" and k != "_acg_plain" and plain_value(v)])
    token = _TOKENS.get(snap)
    if token is None:
        if len(_TOKENS) > 65536:  # an attribute annealed for ever: forget old snapshots
            _TOKENS.clear()
        token = _TOKENS[snap] = next(_NEXT_TOKEN)  # never reused: a stale token never matches
    return token


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints ``<All keys matched successfully>`` if empty."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    """Indent every line but the first (a child's repr nested in its parent's)."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


def _check_name(kind: str, name: Any, owner: "Module", registry: dict) -> None:
    """PyTorch's checks on a parameter/buffer/module name."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        got = f", got: {name}" if kind == "module" else ""
        raise KeyError(f"{kind} name can't contain \".\"{got}")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(owner, name) and name not in registry:
        raise KeyError(f"attribute '{name}' already exists")


def _add_hook(hooks: HookDict, hook: Callable, prepend: bool, *extra: dict) -> RemovableHandle:
    handle = RemovableHandle(hooks, *extra)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class Module:
    """Base class of every layer: assign Parameters, buffers and Modules, define ``forward``."""

    training: bool
    _version: int = 1
    dump_patches: bool = False
    _acg_plain: int = 0  # plain_token of the plain-valued attributes (0: none set yet)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument")
        d = self.__dict__
        d["training"] = True
        for name in ("_parameters", "_buffers", "_modules"):
            d[name] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                     "_backward_pre_hooks"):
            d[name] = HookDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks_with_kwargs"] = {}

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    # -- registration ------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True
                        ) -> None:
        """Register a tensor that is state but not a parameter (e.g. running statistics).

        Non-persistent buffers are left out of ``state_dict``.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             "parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Register ``module`` (or None) as the child ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._modules[name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            d["_modules"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            old = d.get(name, _ABSENT)
            object.__setattr__(self, name, value)
            if name != "training" and (plain_value(value) or plain_value(old)) and \
                    not same_value(old, value):
                d["_acg_plain"] = plain_token(d)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from every place but ``keep``, the registry it is about to be
        (re)registered in (so a re-assigned name keeps its position there)."""
        self.__dict__.pop(name, None)
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg != keep:
                self.__dict__[reg].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg in d and name in d[reg]:
                return d[reg][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setstate__(self, state: dict) -> None:
        """Unpickled or deep-copied: the plain-attribute token is this process's own."""
        self.__dict__.update(state)
        self.__dict__["_acg_plain"] = plain_token(self.__dict__)

    def __delattr__(self, name: str) -> None:
        for reg in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[reg]:
                del self.__dict__[reg][name]
                self._non_persistent_buffers_set.discard(name)
                return
        plain = plain_value(self.__dict__.get(name))
        object.__delattr__(self, name)
        if plain:
            self.__dict__["_acg_plain"] = plain_token(self.__dict__)

    def __dir__(self) -> list[str]:
        keys = (list(dir(type(self))) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # -- traversal ---------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """This module and every descendant, each once, with dotted names."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                                remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool, skip: Callable[["Module", str], bool] | None = None
                       ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for name, value in module.__dict__[registry].items():
                if value is None or id(value) in seen or (skip and skip(module, name)):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a shared parameter appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> "Module":
        """The descendant at dotted path ``target`` ("" is this module)."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # -- bulk changes ------------------------------------------------------------------
    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first), then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` to None (or to zeros)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            p.grad = None if set_to_none else zeros_like(p.grad)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> "Module":
        """Convert every parameter (in place: the Parameter objects stay) and buffer."""
        for module in self.children() if recurse else ():
            module._apply(fn)
        with no_grad():
            for name, p in list(self._parameters.items()):
                if p is None:
                    continue
                new = fn(p)
                if isinstance(new, MetaTensor) != isinstance(p, MetaTensor):  # to or from meta:
                    self._parameters[name] = Parameter(new, p.requires_grad)  # new, as PyTorch
                elif new is not p:
                    grad, p.grad = p.grad, None
                    p.data = new
                    p.grad = None if grad is None else fn(grad)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``: floating
        parameters and buffers take the dtype, every tensor the device."""
        device, dtype = _parse_to(*args, **kwargs)
        if dtype is not None and not is_float(dtype):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if device is not None:
                if isinstance(t, MetaTensor) and as_device(device).type != "meta":
                    raise NotImplementedError(
                        "Cannot copy out of meta tensor; no data! Please use "
                        "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving "
                        "module from meta to a different device.")
                t = t.to(device)
            return t.to(dtype) if dtype is not None and is_float(t.dtype) else t
        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> "Module":
        """Parameters and buffers moved to ``device`` with fresh storage, their values not
        kept (zeros here): how a model built on the meta device gets memory.

        >>> import autograd_compile as acg
        >>> acg.nn.Linear(2, 3).to("meta").to_empty(device="cpu").weight.shape
        acg.Size([3, 2])
        """
        from ..kernels.api import empty

        def fresh(t: Tensor) -> Tensor:
            return empty(tuple(t.shape), dtype=t.dtype, device=device)
        return self._apply(fresh, recurse)

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if is_float(t.dtype) else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if is_float(t.dtype) else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if is_float(t.dtype) else t)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16() if is_float(t.dtype) else t)

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: Any = None) -> "Module":
        target = "cuda" if device is None else device if isinstance(device, str) else device
        if isinstance(device, int):
            target = f"cuda:{device}"
        return self._apply(lambda t: t.cuda(device) if hasattr(t, "cuda") else t.to(target))

    def share_memory(self) -> "Module":
        return self  # jax arrays are immutable; nothing to share

    # -- state dicts -------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name (detached unless ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                                  keep_vars=keep_vars)
        return destination

    def _local_state(self) -> dict[str, Tensor]:
        state = {k: v for k, v in self._parameters.items() if v is not None}
        state.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        return state

    def _plan_load(self, state_dict: Mapping, prefix: str, plan: list, missing: list,
                   unexpected: list, errors: list) -> None:
        """Check this module's keys against ``state_dict``; record the copies to make."""
        local = self._local_state()
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor'
                              f" or Tensor-like object from checkpoint but received {type(value)}")
                continue
            if current.ndim == 0 and value.ndim == 1:
                value = value[0]  # PyTorch's old-checkpoint compatibility
            if tuple(value.shape) != tuple(current.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{_size(value.shape)} from checkpoint, the shape in current model "
                              f"is {_size(current.shape)}.")
                continue
            plan.append((self, name, current, value))
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, *rest = key[len(prefix):].split(".", 1)
            if (head not in self._modules) if rest else (head not in local):
                unexpected.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Tensor], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers.

        Returns ``(missing_keys, unexpected_keys)``; with ``strict`` either kind raises,
        and so does a shape mismatch. Everything is checked before anything is copied,
        so a failed load leaves the module as it was.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        plan: list = []
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix, module in self.named_modules(prefix="", remove_duplicate=False):
            module._plan_load(state_dict, f"{prefix}." if prefix else "", plan, missing,
                              unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        _copy_all(plan, assign)
        return _IncompatibleKeys(missing, unexpected)

    # -- calling and hooks -------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        bw_hook = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw_hook = BackwardHook(self, list(self._backward_hooks.values()),
                                   list(self._backward_pre_hooks.values()))
        args, kwargs = self._run_forward_pre_hooks(args, kwargs)
        if bw_hook is not None:
            args = bw_hook.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                new = hook(self, args, kwargs, result)
            else:
                new = hook(self, args, result)
            if new is not None:
                result = new
        if bw_hook is not None:
            result = bw_hook.setup_output_hook(result)
        return result

    def _run_forward_pre_hooks(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                new = hook(self, args, kwargs)
                if new is None:
                    continue
                if not (isinstance(new, tuple) and len(new) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {new}.")
                args, kwargs = new
            else:
                new = hook(self, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        return args, kwargs

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``;
        a returned value replaces the arguments."""
        handle = _add_hook(self._forward_pre_hooks, hook, prepend,
                           self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after
        ``forward``; a returned value replaces the output."""
        handle = _add_hook(self._forward_hooks, hook, prepend, self._forward_hooks_with_kwargs)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """``hook(module, grad_output)`` when the gradients w.r.t. the module's outputs are
        known; a returned tuple replaces them."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's
        inputs are computed; a returned tuple replaces ``grad_input``.

        Built on autograd node hooks around an identity Function on the inputs and
        outputs, so compiled autograd captures it like any other hook.
        """
        return _add_hook(self._backward_hooks, hook, prepend)

    # -- printing ----------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """Override to show a layer's configuration in its repr."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2)
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _size(shape: tuple) -> str:
    return f"torch.Size({list(shape)})"


def _copy_all(plan: list, assign: bool) -> None:
    with no_grad():
        for module, name, current, value in plan:
            if assign:
                new = value if not isinstance(current, Parameter) else Parameter(
                    value, current.requires_grad)
                if isinstance(current, Parameter):
                    module._parameters[name] = new
                else:
                    module._buffers[name] = new
            else:
                current.copy_(value.to(current.dtype))


def _parse_to(*args: Any, device: Any = None, dtype: Any = None, non_blocking: bool = False,
              **kwargs: Any) -> tuple[Any, Any]:
    """(device, dtype) from ``Module.to``'s overloads."""
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, (str, int)) or not _is_dtype(a):
            device = a
        else:
            dtype = as_dtype(a)
    return device, as_dtype(dtype)


def _is_dtype(a: Any) -> bool:
    try:
        as_dtype(a)
    except TypeError:
        return False
    return True
