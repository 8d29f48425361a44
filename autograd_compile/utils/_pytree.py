"""``torch.utils._pytree``: nested containers flattened to a list of leaves and a spec.

Libraries written for PyTorch (and programs that borrowed from them) walk nested
arguments with these functions. The nodes are PyTorch's: ``tuple``, ``list``, ``dict``,
``OrderedDict``, ``defaultdict``, ``deque``, namedtuples, ``acg.Size``, and whatever
:func:`register_pytree_node` adds; everything else, ``None`` included, is a leaf.

>>> from autograd_compile.utils import _pytree as pytree
>>> leaves, spec = pytree.tree_flatten({"b": 1, "a": (2, [3])})
>>> leaves, spec.num_leaves, pytree.tree_unflatten([10, 20, 30], spec)
([1, 2, 3], 3, {'b': 10, 'a': (20, [30])})
>>> pytree.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)])
[11, (22, 33)]
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from .._types import Size

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], "tuple[list, Context]"]
UnflattenFunc = Callable[[Iterable, Context], PyTree]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Callable | None = None


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Make ``cls`` a node: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def register_dataclass(cls: type, **kwargs: Any) -> type:
    """A dataclass as a node whose children are its fields, in declaration order."""
    names = [f.name for f in dataclasses.fields(cls)]
    register_pytree_node(cls, lambda x: ([getattr(x, n) for n in names], names),
                         lambda children, ctx: cls(**dict(zip(ctx, children))))
    return cls


def _namedtuple_flatten(x: Any) -> tuple[list, Context]:
    return list(x), type(x)


def _register_builtins() -> None:
    register_pytree_node(tuple, lambda x: (list(x), None), lambda c, _: tuple(c))
    register_pytree_node(list, lambda x: (list(x), None), lambda c, _: list(c))
    register_pytree_node(dict, lambda x: (list(x.values()), list(x)),
                         lambda c, keys: dict(zip(keys, c)))
    register_pytree_node(collections.OrderedDict, lambda x: (list(x.values()), list(x)),
                         lambda c, keys: collections.OrderedDict(zip(keys, c)))
    register_pytree_node(collections.defaultdict,
                         lambda x: (list(x.values()), (x.default_factory, list(x))),
                         lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)))
    register_pytree_node(collections.deque, lambda x: (list(x), x.maxlen),
                         lambda c, maxlen: collections.deque(c, maxlen=maxlen))
    register_pytree_node(Size, lambda x: (list(x), None), lambda c, _: Size(c))


_register_builtins()


def is_namedtuple(obj: Any) -> bool:
    """A namedtuple class or instance (a tuple subclass with ``_fields``)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


is_namedtuple_instance = is_namedtuple


def _node_of(tree: Any) -> NodeDef | None:
    kind = type(tree)
    node = SUPPORTED_NODES.get(kind)
    if node is None and is_namedtuple(kind):  # every namedtuple class, unregistered
        return NodeDef(kind, _namedtuple_flatten, lambda c, cls: cls(*c))
    return node


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or _node_of(tree) is None


@dataclasses.dataclass(eq=True)
class TreeSpec:
    """A tree's shape: its node type, the node's context (dict keys...) and children's specs."""
    type: Any
    context: Context
    children_specs: list["TreeSpec"]

    def __post_init__(self) -> None:
        self.num_nodes = 1 + sum(s.num_nodes for s in self.children_specs)
        self.num_leaves = sum(s.num_leaves for s in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        return tree_unflatten(leaves, self)

    def __repr__(self) -> str:
        if self.is_leaf():
            return "*"
        name = getattr(self.type, "__name__", str(self.type))
        return f"TreeSpec({name}, {self.context!r}, [{', '.join(map(repr, self.children_specs))}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])

    def __post_init__(self) -> None:
        self.num_nodes, self.num_leaves, self.num_children = 1, 1, 0


def treespec_leaf() -> LeafSpec:
    return LeafSpec()


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                 ) -> tuple[list[Any], TreeSpec]:
    """``(leaves, spec)``: the leaves in order, and what rebuilds the tree around them."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(tree: Any, leaves: list, is_leaf: Callable | None) -> TreeSpec:
    node = None if is_leaf is not None and is_leaf(tree) else _node_of(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = node.flatten_fn(tree)
    return TreeSpec(node.type, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The tree of ``treespec`` with ``leaves`` in its leaves' places."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    return _build(treespec, iter(leaves))


def _build(spec: TreeSpec, leaves: Iterator[Any]) -> Any:
    if spec.is_leaf():
        return next(leaves)
    children = [_build(c, leaves) for c in spec.children_specs]
    node = SUPPORTED_NODES.get(spec.type)
    if node is None:  # an unregistered namedtuple class
        return spec.type(*children)
    return node.unflatten_fn(children, spec.context)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> Iterator[Any]:
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``func`` of each leaf (and the leaves in the same places of ``rests``), same shape."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, r) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``func`` of each leaf for its effect (in-place updates); returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _flatten_up_to(spec: TreeSpec, tree: Any) -> list[Any]:
    """``tree``'s values at ``spec``'s leaves (``tree`` may go deeper there)."""
    if spec.is_leaf():
        return [tree]
    node = _node_of(tree)
    if node is None or node.type is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = node.flatten_fn(tree)
    if len(children) != spec.num_children:
        raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                         f"{len(children)}.")
    if context != spec.context and spec.type not in (list, tuple, collections.deque):
        raise ValueError(f"Node context mismatch for custom node type {spec.type}.")
    return [x for c, s in zip(children, spec.children_specs) for x in _flatten_up_to(s, c)]


def _only(types: Any, func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(type_or_types: Any, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``tree_map`` of ``func`` on the leaves of the given type(s); others pass as they are."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types: Any, func: Callable[[Any], Any], tree: PyTree,
                   is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types: Any, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: Any, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


# -- key paths -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def _keys(tree: Any, spec: TreeSpec) -> list[Any]:
    if isinstance(tree, dict):
        return [MappingKey(k) for k in tree]
    if is_namedtuple(tree):
        return [GetAttrKey(f) for f in type(tree)._fields]
    if dataclasses.is_dataclass(tree):
        return [GetAttrKey(f.name) for f in dataclasses.fields(tree)]
    return [SequenceKey(i) for i in range(spec.num_children)]


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                           ) -> tuple[list[tuple[tuple, Any]], TreeSpec]:
    """``([(key_path, leaf)...], spec)``; a key path is a tuple of ``SequenceKey``/``MappingKey``/
    ``GetAttrKey`` (``keystr`` prints it as ``[0]['a'].x``)."""
    spec = tree_structure(tree, is_leaf)
    out: list[tuple[tuple, Any]] = []
    _with_path(tree, spec, (), out)
    return out, spec


def _with_path(tree: Any, spec: TreeSpec, path: tuple, out: list) -> None:
    if spec.is_leaf():
        out.append((path, tree))
        return
    node = _node_of(tree)
    children = node.flatten_fn(tree)[0] if node is not None else []
    for key, child, s in zip(_keys(tree, spec), children, spec.children_specs):
        _with_path(child, s, path + (key,), out)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                          ) -> list[tuple[tuple, Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [_flatten_up_to(spec, r) for r in rests]
    return tree_unflatten([func(p, x, *o) for (p, x), *o in zip(pairs, *others)], spec)


def keystr(kp: tuple) -> str:
    return "".join(str(k) for k in kp)


__all__ = ["PyTree", "TreeSpec", "LeafSpec", "register_pytree_node", "register_dataclass",
           "tree_flatten", "tree_unflatten", "tree_leaves", "tree_iter", "tree_structure",
           "tree_map", "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "tree_is_leaf", "tree_flatten_with_path",
           "tree_leaves_with_path", "tree_map_with_path", "keystr", "SequenceKey", "MappingKey",
           "GetAttrKey", "is_namedtuple", "is_namedtuple_instance", "treespec_leaf"]
