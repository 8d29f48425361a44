"""DataPipes (``torch.utils.data.datapipes``): composable datasets with functional forms.

``IterDataPipe`` (a stream) and ``MapDataPipe`` (indexable) chain through registered functional
names: ``dp.map(f).filter(g).batch(4)``. ``functional_datapipe("name")`` registers a new one;
``IterDataPipe[int]`` declares the element type, checked by ``runtime_validation`` (``__iter__``)
and ``argument_validation`` (DataPipe arguments); ``non_deterministic`` pipes refuse to be built
under ``guaranteed_datapipes_determinism``. The built-in forms: ``map``, ``filter``, ``batch``,
``unbatch``, ``collate``, ``shuffle``, ``concat``, ``zip``, ``mux``, ``fork``, ``demux``,
``sharding_filter`` (iterable) and ``map``, ``batch``, ``concat``, ``shuffle``, ``zip`` (map).

>>> dp = IterableWrapper(range(10)).filter(lambda x: x % 2 == 0).map(lambda x: x * 10)
>>> list(dp.batch(2))
[[0, 20], [40, 60], [80]]
>>> SequenceWrapper([1, 2, 3]).map(str)[2]
'3'
"""
from __future__ import annotations

import functools
import inspect
import itertools
import typing
import warnings
from collections import deque
from typing import Any, Callable, Iterable, Iterator, get_args, get_origin, get_type_hints

import numpy as np

from ._collate import default_collate
from .dataset import Dataset, IterableDataset

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "IterableWrapper",
           "SequenceWrapper", "argument_validation", "functional_datapipe",
           "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
           "runtime_validation_disabled"]


# -- element types --------------------------------------------------------------------------------
def _issubtype(a: Any, b: Any) -> bool:
    """Whether type hint ``a`` is a subtype of hint ``b`` (Any, Union, classes, generics)."""
    if b is Any:
        return True
    if a is Any:
        return False
    if get_origin(a) is typing.Union:
        return all(_issubtype(x, b) for x in get_args(a))
    if get_origin(b) is typing.Union:
        return any(_issubtype(a, x) for x in get_args(b))
    oa, ob = get_origin(a) or a, get_origin(b) or b
    if not (isinstance(oa, type) and isinstance(ob, type) and issubclass(oa, ob)):
        return False
    args_a, args_b = get_args(a), get_args(b)
    if not args_b:
        return True
    return len(args_a) == len(args_b) and all(map(_issubtype, args_a, args_b))


def _is_instance(value: Any, hint: Any) -> bool:
    """Whether ``value`` is an instance of hint ``hint``, elements of containers included."""
    if hint is Any:
        return True
    if get_origin(hint) is typing.Union:
        return any(_is_instance(value, h) for h in get_args(hint))
    origin, args = get_origin(hint) or hint, get_args(hint)
    if not isinstance(value, origin):
        return False
    if not args:
        return True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_is_instance(v, args[0]) for v in value)
        return len(value) == len(args) and all(map(_is_instance, value, args))
    if issubclass(origin, dict):
        return all(_is_instance(k, args[0]) and _is_instance(v, args[1])
                   for k, v in value.items())
    return all(_is_instance(v, args[0]) for v in value)


class _DataPipeType:
    """The declared element type of a DataPipe class (``IterDataPipe[int]`` -> ``int``)."""

    def __init__(self, param: Any) -> None:
        self.param = param

    def issubtype(self, other: "_DataPipeType") -> bool:
        return _issubtype(self.param, other.param)

    def issubtype_of_instance(self, value: Any) -> bool:
        return _is_instance(value, self.param)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DataPipeType) and self.param == other.param

    def __hash__(self) -> int:
        return hash(self.param)

    def __repr__(self) -> str:
        p = self.param
        return p.__name__ if isinstance(p, type) and not get_args(p) else repr(p).replace(
            "typing.", "")


# -- the DataPipe bases ----------------------------------------------------------------------------
class _Functional:
    """Functional forms: ``pipe.name(...)`` builds the registered class over ``pipe``."""

    functions: dict[str, Callable] = {}
    type = _DataPipeType(Any)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__orig_bases__ if "__orig_bases__" in cls.__dict__ else ():
            if isinstance(base, _Typed):  # class P(IterDataPipe[int]) declares int
                cls.type = _DataPipeType(base.param)

    def __class_getitem__(cls, param: Any) -> "_Typed":
        return _Typed(cls, param)

    def __getattr__(self, name: str) -> Any:
        functions = type(self).functions
        if name in functions:
            return functools.partial(functions[name], self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @classmethod
    def register_datapipe_as_function(cls, function_name: str, cls_to_register: Any,
                                      enable_df_api_tracing: bool = False) -> None:
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")
        cls.functions[function_name] = cls_to_register

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(type(self).functions))


class _Typed:
    """``IterDataPipe[T]`` as a base class: the base, and the declared element type."""

    def __init__(self, base: type, param: Any) -> None:
        self.base, self.param = base, param

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (self.base,)


class IterDataPipe(_Functional, IterableDataset):
    """An iterable DataPipe: subclasses define ``__iter__``."""

    functions: dict[str, Callable] = {}

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __repr__(self) -> str:
        return type(self).__qualname__


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of DataFrames."""

    def _is_dfpipe(self) -> bool:
        return True


class MapDataPipe(_Functional, Dataset):
    """A map-style DataPipe: subclasses define ``__getitem__`` and ``__len__``."""

    functions: dict[str, Callable] = {}

    def __repr__(self) -> str:
        return type(self).__qualname__


class DataChunk(list):
    """A batch a DataPipe yields: a list with ``as_str`` and ``raw_iterator``."""

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def raw_iterator(self) -> Iterator[Any]:
        yield from list.__iter__(self)


# -- decorators --------------------------------------------------------------------------------
_determinism = False
_runtime_validation_enabled = True


class functional_datapipe:
    """Class decorator: ``@functional_datapipe("name")`` makes ``pipe.name(...)`` build it."""

    def __init__(self, name: str, enable_df_api_tracing: bool = False) -> None:
        self.name, self.enable_df_api_tracing = name, enable_df_api_tracing

    def __call__(self, cls: Any) -> Any:
        target = cls.cls if isinstance(cls, non_deterministic) else cls
        if isinstance(target, type) and issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls, self.enable_df_api_tracing)
        elif isinstance(target, type) and issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls


class guaranteed_datapipes_determinism:
    """While set (on construction, until the ``with`` block ends), building a
    ``non_deterministic`` DataPipe raises TypeError."""

    def __init__(self) -> None:
        global _determinism
        self.prev, _determinism = _determinism, True

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks an IterDataPipe class (or, given a function of the constructor's arguments, the
    inputs for which it is) as non-deterministic."""

    cls: Any = None

    def __init__(self, arg: Any) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`"
                                f", but {arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.cls is not None:
            if _determinism:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                "'guaranteed_datapipes_determinism'. You can turn off "
                                "determinism for this DataPipe if that is acceptable for your "
                                "application")
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} "
                            "is found")
        self.cls = args[0]
        return self._checked_build

    def _checked_build(self, *args: Any, **kwargs: Any) -> Any:
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to "
                            f"return a boolean value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you "
                            "set 'guaranteed_datapipes_determinism'. You can turn off "
                            "determinism for this DataPipe if that is acceptable for your "
                            "application")
        return self.cls(*args, **kwargs)


def _hinted_type(hint: Any) -> _DataPipeType | None:
    """The element type a DataPipe hint asks for (``IterDataPipe[int]`` -> int); None if the
    hint is no DataPipe type."""
    if isinstance(hint, _Typed):
        return _DataPipeType(hint.param)
    if isinstance(hint, type) and issubclass(hint, _Functional):
        return hint.type
    return None


def argument_validation(f: Callable) -> Callable:
    """Checks, on each call, that arguments hinted as DataPipe types are IterDataPipes whose
    element type is a subtype of the hint's."""
    signature, hints = inspect.signature(f), get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            expected = _hinted_type(hints.get(name))
            if expected is None:
                continue
            if not isinstance(value, IterDataPipe):
                raise TypeError(f"Expected argument '{name}' as a IterDataPipe, but found "
                                f"{type(value)}")
            if not value.type.issubtype(expected):
                raise TypeError(f"Expected type of argument '{name}' as a subtype of hint "
                                f"{expected}, but found {value.type}")
        return f(*args, **kwargs)
    return wrapper


class runtime_validation_disabled:
    """While set, ``runtime_validation`` checks nothing."""

    def __init__(self) -> None:
        global _runtime_validation_enabled
        self.prev, _runtime_validation_enabled = _runtime_validation_enabled, False

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f: Callable) -> Callable:
    """Decorates ``__iter__``: every element yielded must be of the DataPipe's declared type."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self: Any) -> Iterator[Any]:
        for d in f(self):
            if _runtime_validation_enabled and not self.type.issubtype_of_instance(d):
                raise RuntimeError(f"Expected an instance as subtype of {self.type}, but found "
                                   f"{d}({type(d)})")
            yield d
    return wrapper


# -- sources -------------------------------------------------------------------------------------
class IterableWrapper(IterDataPipe):
    """Any iterable as an IterDataPipe."""

    def __init__(self, iterable: Iterable[Any], deepcopy: bool = True) -> None:
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable)

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]


class SequenceWrapper(MapDataPipe):
    """Any sequence as a MapDataPipe."""

    def __init__(self, sequence: Any, deepcopy: bool = True) -> None:
        self.sequence = sequence

    def __getitem__(self, index: Any) -> Any:
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)


# -- iterable functional forms -------------------------------------------------------------------
def _apply_cols(fn: Callable, data: Any, input_col: Any, output_col: Any) -> Any:
    """``map``'s column forms: fn of some fields of a tuple/list/dict sample."""
    if input_col is None:
        if output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        return fn(data)
    cols = list(input_col) if isinstance(input_col, (list, tuple)) else [input_col]
    res = fn(*(data[c] for c in cols))
    out = data if isinstance(data, dict) else list(data)
    if output_col is None:
        if len(cols) > 1:
            raise ValueError("`output_col` must be a single-element list or tuple")
        out[cols[0]] = res
    elif output_col == -1:
        out.append(res)
    else:
        out[output_col[0] if isinstance(output_col, (list, tuple)) else output_col] = res
    return tuple(out) if isinstance(data, tuple) else out


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    def __init__(self, datapipe: IterDataPipe, fn: Callable, input_col: Any = None,
                 output_col: Any = None) -> None:
        self.datapipe, self.fn, self.input_col, self.output_col = datapipe, fn, input_col, \
            output_col

    def __iter__(self) -> Iterator[Any]:
        for d in self.datapipe:
            yield _apply_cols(self.fn, d, self.input_col, self.output_col)

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    def __init__(self, datapipe: IterDataPipe, filter_fn: Callable, input_col: Any = None
                 ) -> None:
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def __iter__(self) -> Iterator[Any]:
        for d in self.datapipe:
            args = (d,) if self.input_col is None else (
                [d[c] for c in self.input_col] if isinstance(self.input_col, (list, tuple))
                else [d[self.input_col]])
            keep = self.filter_fn(*args)
            if not isinstance(keep, bool):
                raise ValueError("Boolean output is required for `filter_fn` of "
                                 f"FilterIterDataPipe, got {type(keep)}")
            if keep:
                yield d


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    def __init__(self, datapipe: IterDataPipe, batch_size: int, drop_last: bool = False,
                 wrapper_class: type = DataChunk) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self) -> Iterator[Any]:
        it = iter(self.datapipe)
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) == self.batch_size or not self.drop_last:
                yield self.wrapper_class(batch)

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    def __init__(self, datapipe: IterDataPipe, unbatch_level: int = 1) -> None:
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def __iter__(self) -> Iterator[Any]:
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element: Any, level: int) -> Iterator[Any]:
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("collate")
class CollatorIterDataPipe(IterDataPipe):
    def __init__(self, datapipe: IterDataPipe, conversion: Any = default_collate,
                 collate_fn: Callable | None = None) -> None:
        self.datapipe = datapipe
        self.fn = collate_fn if collate_fn is not None else conversion

    def __iter__(self) -> Iterator[Any]:
        for d in self.datapipe:
            yield self.fn(d)

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """A buffer of ``buffer_size`` elements, each yielded element drawn from it at random
    (acg's global generator seeds each pass, so ``acg.manual_seed`` reproduces it)."""

    def __init__(self, datapipe: IterDataPipe, *, buffer_size: int = 10000,
                 unbatch_level: int = 0) -> None:
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(unbatch_level)
        self.buffer_size, self._enabled, self._seed = buffer_size, True, None

    def set_shuffle(self, shuffle: bool = True) -> "ShufflerIterDataPipe":
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> "ShufflerIterDataPipe":
        self._seed = seed
        return self

    def __iter__(self) -> Iterator[Any]:
        if not self._enabled:
            yield from self.datapipe
            return
        from .sampler import _draw_seed
        rng = np.random.default_rng(self._seed if self._seed is not None else _draw_seed())
        buffer: list[Any] = []
        for x in self.datapipe:
            if len(buffer) == self.buffer_size:
                i = int(rng.integers(len(buffer)))
                buffer[i], x = x, buffer[i]
                yield x
            else:
                buffer.append(x)
        while buffer:
            i = int(rng.integers(len(buffer)))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    def __init__(self, *datapipes: IterDataPipe) -> None:
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[Any]:
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    def __init__(self, *datapipes: IterDataPipe) -> None:
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for "
                            "`ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[Any]:
        yield from zip(*self.datapipes)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One element from each input in turn, round by round, until the shortest is
    exhausted."""

    def __init__(self, *datapipes: IterDataPipe) -> None:
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[Any]:
        iterators = [iter(dp) for dp in self.datapipes]
        while True:
            row = []
            for it in iterators:
                try:
                    row.append(next(it))
                except StopIteration:
                    return  # as PyTorch's: an incomplete last round is dropped
            yield from row

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes) * len(self.datapipes)


class _Child(IterDataPipe):
    """One output of ``fork`` / ``demux``: reads its own queue of a shared source pass."""

    def __init__(self, parent: "_Splitter", index: int) -> None:
        self.parent, self.index = parent, index

    def __iter__(self) -> Iterator[Any]:
        return self.parent.read(self.index)


class _Splitter:
    """A source iterated once, its elements routed to per-child buffers."""

    def __init__(self, datapipe: IterDataPipe, n: int, route: Callable[[Any], list[int]],
                 buffer_size: int) -> None:
        self.datapipe, self.n, self.route, self.buffer_size = datapipe, n, route, buffer_size
        self.source: Iterator[Any] | None = None
        self.buffers: list[deque] = [deque() for _ in range(n)]
        self.started = [False] * n

    def read(self, index: int) -> Iterator[Any]:
        if self.source is None or all(self.started):  # a new pass for everyone
            self.source, self.started = iter(self.datapipe), [False] * self.n
            self.buffers = [deque() for _ in range(self.n)]
        self.started[index] = True
        while True:
            if self.buffers[index]:
                yield self.buffers[index].popleft()
                continue
            try:
                x = next(self.source)
            except StopIteration:
                return
            for i in self.route(x):
                self.buffers[i].append(x)
            if self.buffer_size >= 0 and sum(map(len, self.buffers)) > self.buffer_size:
                raise BufferError(f"DataPipe buffer size {self.buffer_size} exceeded")


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``n`` DataPipes each yielding every element of the source (one pass, buffered)."""

    def __new__(cls, datapipe: IterDataPipe, num_instances: int, buffer_size: int = 1000,
                copy: Any = None) -> Any:  # type: ignore[misc]
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")
        if num_instances == 1:
            return datapipe
        splitter = _Splitter(datapipe, num_instances, lambda x: list(range(num_instances)),
                             buffer_size)
        return [_Child(splitter, i) for i in range(num_instances)]


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """``n`` DataPipes; element x goes to output ``classifier_fn(x)`` (None: dropped, with
    ``drop_none``)."""

    def __new__(cls, datapipe: IterDataPipe, num_instances: int,
                classifier_fn: Callable[[Any], int | None], drop_none: bool = False,
                buffer_size: int = 1000) -> Any:  # type: ignore[misc]
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")

        def route(x: Any) -> list[int]:
            i = classifier_fn(x)
            if i is None and drop_none:
                return []
            if i is None or not 0 <= i < num_instances:
                raise ValueError(f"Output of the classification fn should be between 0 and "
                                 f"{num_instances - 1}. {i} is returned.")
            return [i]
        splitter = _Splitter(datapipe, num_instances, route, buffer_size)
        return [_Child(splitter, i) for i in range(num_instances)]


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Every ``num_of_instances``-th element from ``instance_id`` (set by ``apply_sharding``;
    the DataLoader's workers shard by their id)."""

    def __init__(self, source_datapipe: IterDataPipe, sharding_group_filter: Any = None) -> None:
        self.source_datapipe, self.num_of_instances, self.instance_id = source_datapipe, 1, 0

    def apply_sharding(self, num_of_instances: int, instance_id: int,
                       sharding_group: Any = None) -> None:
        self.num_of_instances, self.instance_id = num_of_instances, instance_id

    def __iter__(self) -> Iterator[Any]:
        from ._worker import get_worker_info
        n, i = self.num_of_instances, self.instance_id
        info = get_worker_info()
        if n == 1 and info is not None:  # in a DataLoader worker: shard by worker
            n, i = info.num_workers, info.id
        for k, item in enumerate(self.source_datapipe):
            if k % n == i:
                yield item

    def __len__(self) -> int:
        n = len(self.source_datapipe)
        return n // self.num_of_instances + (1 if self.instance_id < n % self.num_of_instances
                                             else 0)


# -- map-style functional forms --------------------------------------------------------------------
@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    def __init__(self, datapipe: MapDataPipe, fn: Callable) -> None:
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index: Any) -> Any:
        return self.fn(self.datapipe[index])

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    def __init__(self, datapipe: MapDataPipe, batch_size: int, drop_last: bool = False,
                 wrapper_class: type = DataChunk) -> None:
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < len(self):
            raise IndexError(f"Index {index} is out of bound.")
        start = index * self.batch_size
        stop = min(start + self.batch_size, len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    def __init__(self, *datapipes: MapDataPipe) -> None:
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index: int) -> Any:
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    def __init__(self, *datapipes: MapDataPipe) -> None:
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index: int) -> tuple:
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


class ShufflerMapDataPipe(IterDataPipe):
    """A map DataPipe's elements in a random order (an IterDataPipe, as PyTorch's)."""

    def __init__(self, datapipe: MapDataPipe, *, indices: list | None = None) -> None:
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._enabled, self._seed = True, None

    def set_shuffle(self, shuffle: bool = True) -> "ShufflerMapDataPipe":
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int) -> "ShufflerMapDataPipe":
        self._seed = seed
        return self

    def __iter__(self) -> Iterator[Any]:
        order = list(self.indices)
        if self._enabled:
            from .sampler import _draw_seed
            rng = np.random.default_rng(self._seed if self._seed is not None else _draw_seed())
            order = [order[i] for i in rng.permutation(len(order))]
        for i in order:
            yield self.datapipe[i]

    def __len__(self) -> int:
        return len(self.indices)


# a map DataPipe's shuffle is an IterDataPipe, registered under MapDataPipe's names
MapDataPipe.register_datapipe_as_function("shuffle", ShufflerMapDataPipe)


def _graph(datapipe: Any) -> Iterator[Any]:
    """Every DataPipe feeding ``datapipe`` (itself included), through the usual attributes."""
    seen: set[int] = set()
    stack = [datapipe]
    while stack:
        dp = stack.pop()
        if id(dp) in seen:
            continue
        seen.add(id(dp))
        yield dp
        for name in ("datapipe", "source_datapipe"):
            if isinstance(getattr(dp, name, None), (IterDataPipe, MapDataPipe)):
                stack.append(getattr(dp, name))
        stack.extend(d for d in getattr(dp, "datapipes", ()) if isinstance(d, (IterDataPipe,
                                                                                MapDataPipe)))
        if isinstance(dp, _Child):
            stack.append(dp.parent.datapipe)


def apply_shuffle_settings(datapipe: Any, shuffle: bool | None = None) -> Any:
    """``DataLoader(pipe, shuffle=...)``: turn every shuffle of the graph on or off."""
    if shuffle is None:
        return datapipe
    shufflers = [dp for dp in _graph(datapipe)
                 if isinstance(dp, (ShufflerIterDataPipe, ShufflerMapDataPipe))]
    if not shufflers and shuffle:
        warnings.warn("`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. "
                      "Adding one at the end. Be aware that the default buffer size might not "
                      "be sufficient for your task.", UserWarning, stacklevel=3)
        return datapipe.shuffle()
    for dp in shufflers:
        dp.set_shuffle(shuffle)
    return datapipe
