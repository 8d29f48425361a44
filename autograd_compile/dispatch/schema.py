"""Operator schemas: ``"ns::name.overload(Tensor x, *, float alpha=1.0) -> Tensor"``.

A schema string is parsed once into a frozen :class:`FunctionSchema`; the
dispatcher uses it to find tensor arguments, to normalise a call's arguments
and to know which arguments an op mutates (``Tensor(a!)``).

>>> s = parse_schema("myns::foo(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor")
>>> s.name, [a.name for a in s.arguments], s.arguments[2].kwarg_only
('myns::foo', ['x', 'y', 'alpha'], True)
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_TYPES = {
    "Tensor", "Tensor?", "Tensor[]", "int", "int?", "int[]", "int[]?", "SymInt", "SymInt[]",
    "SymInt?", "SymInt[]?", "float", "float?", "Scalar", "Scalar?", "bool", "bool?", "str",
    "str?", "ScalarType", "ScalarType?", "Device?", "Any",
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)?(\.[A-Za-z_0-9]+)?$")
_NO_DEFAULT = object()


class SchemaError(ValueError):
    """A schema string that does not parse, or disagrees with an earlier one."""


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    type: str
    default: object = _NO_DEFAULT
    kwarg_only: bool = False
    mutable: bool = False  # declared Tensor(a!): the op writes into it

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor")

    def __str__(self) -> str:
        ty = "Tensor(a!)" if self.mutable else self.type
        text = f"{ty} {self.name}"
        return text + (f"={_render_default(self.default)}" if self.has_default else "")


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    name: str  # "ns::op"
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[str, ...]
    names: tuple[str, ...] = field(default=())
    # read on every op call: computed once (any argument declared Tensor(a!))
    is_mutable: bool = field(init=False, default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_mutable", any(a.mutable for a in self.arguments))

    @property
    def qualified_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __str__(self) -> str:
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = self.returns[0] if len(self.returns) == 1 else f"({', '.join(self.returns)})"
        return f"{self.qualified_name}({', '.join(parts)}) -> {rets}"

    def bind(self, args: tuple, kwargs: dict) -> list:
        """All arguments as one positional list in schema order, defaults filled."""
        if not kwargs and len(args) == len(self.arguments):  # the common call: all given
            return list(args)
        if len(args) > len(self.arguments):
            raise TypeError(f"{self.qualified_name}() takes at most {len(self.arguments)} "
                            f"arguments but {len(args)} were given")
        out = list(args)
        for a in self.arguments[len(args):]:
            if a.name in kwargs:
                out.append(kwargs[a.name])
            elif a.has_default:
                out.append(a.default)
            else:
                raise TypeError(f"{self.qualified_name}() missing required argument '{a.name}'")
        if kwargs and not set(kwargs) <= {a.name for a in self.arguments[len(args):]}:
            bad = sorted(set(kwargs) - {a.name for a in self.arguments})
            raise TypeError(f"{self.qualified_name}() got unexpected keyword argument(s) {bad}")
        return out


def _render_default(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _parse_default(text: str) -> object:
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise SchemaError(f"bad default value {text!r}") from e
    return tuple(value) if isinstance(value, list) else value


def _parse_argument(text: str, kwarg_only: bool, schema: str) -> Argument:
    decl, _, default = text.partition("=")
    pieces = decl.split()
    if len(pieces) != 2:
        raise SchemaError(f"cannot parse argument {text!r} in schema {schema!r}")
    ty, name = pieces
    mutable = ty == "Tensor(a!)"
    ty = "Tensor" if mutable else re.sub(r"\[\d+\]", "[]", ty)
    if ty not in _TYPES:
        raise SchemaError(f"unknown type {ty!r} for argument {name!r} in schema {schema!r}")
    value = _parse_default(default.strip()) if default else _NO_DEFAULT
    return Argument(name, ty, value, kwarg_only, mutable)


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + ([cur.strip()] if cur.strip() else [])


def parse_schema(text: str, default_namespace: str | None = None) -> FunctionSchema:
    """Parse ``"ns::name.overload(args) -> returns"`` into a FunctionSchema."""
    m = re.fullmatch(r"\s*([^(\s]+)\s*\((.*)\)\s*->\s*(.+?)\s*", text)
    if not m:
        raise SchemaError(f"cannot parse schema {text!r}: expected 'ns::name(args) -> ret'")
    full, arg_text, ret_text = m.groups()
    if not _NAME.match(full):
        raise SchemaError(f"bad operator name {full!r} in schema {text!r}")
    if "::" not in full:
        if default_namespace is None:
            raise SchemaError(f"schema {text!r} has no namespace")
        full = f"{default_namespace}::{full}"
    name, _, overload = full.partition(".")
    args, kwarg_only = [], False
    for piece in _split_top(arg_text):
        if piece == "*":
            kwarg_only = True
            continue
        args.append(_parse_argument(piece, kwarg_only, text))
    if len({a.name for a in args}) != len(args):
        raise SchemaError(f"duplicate argument name in schema {text!r}")
    inner = ret_text[1:-1] if ret_text.startswith("(") else ret_text
    rets = tuple("Tensor" if r.startswith("Tensor(a!)") else r.split()[0]
                 for r in _split_top(inner))
    return FunctionSchema(name, overload, tuple(args), rets)
