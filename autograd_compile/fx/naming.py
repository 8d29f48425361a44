"""Readable, unique Python identifiers for nodes and generated-code globals.

>>> ns = Namespace()
>>> ns.create("mul"), ns.create("mul"), ns.create("sum"), ns.create("lambda")
('mul', 'mul_1', 'sum_1', 'lambda_1')
>>> base_name("acg::sum.dim")
'sum_dim'
"""
from __future__ import annotations

import builtins
import keyword
import operator
import re
from typing import Any

# names the generated code itself uses; a node with such a name would shadow them
CODEGEN_NAMES: frozenset[str] = frozenset({"self", "ops", "operator", "forward"})
RESERVED: frozenset[str] = frozenset(
    set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins)) | CODEGEN_NAMES
)

_NON_IDENT = re.compile(r"[^0-9a-zA-Z_]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_QUALNAME = re.compile(r"^[A-Za-z_]\w*::[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")


def sanitize(text: str) -> str:
    """Turn arbitrary text into an identifier-shaped string (may still be reserved)."""
    clean = _NON_IDENT.sub("_", text)
    if clean != text:  # '<lambda>' -> 'lambda', not '_lambda_'
        clean = clean.strip("_")
    if not clean:
        return "_"
    return "_" + clean if clean[0].isdigit() else clean


def base_name(qualname: str) -> str:
    """'acg::sum.dim' -> 'sum_dim'; the default overload adds nothing."""
    name = qualname.split("::", 1)[-1]
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return sanitize(name.replace(".", "_"))


def op_qualname(target: Any) -> str | None:
    """The 'ns::name.overload' of an operator object, or None for anything else."""
    qualname = getattr(target, "qualname", None) if not isinstance(target, str) else None
    return qualname if isinstance(qualname, str) and "::" in qualname else None


def is_qualname_renderable(qualname: str) -> bool:
    """Whether ``ops.<ns>.<name>.<overload>`` spelled from ``qualname`` is valid Python."""
    if not _QUALNAME.match(qualname):
        return False
    parts = qualname.replace("::", ".").split(".")
    return not any(keyword.iskeyword(p) for p in parts)


def operator_name(target: Any) -> str | None:
    """'mul' when ``target`` is ``operator.mul`` (the module's own object), else None."""
    name = getattr(target, "__name__", None)
    if isinstance(name, str) and getattr(operator, name, None) is target:
        return name
    return None


def builtin_name(target: Any) -> str | None:
    """'len' when ``target`` is the builtin ``len``, else None."""
    name = getattr(target, "__name__", None)
    if isinstance(name, str) and getattr(builtins, name, None) is target:
        return name
    return None


def needs_global(target: Any) -> bool:
    """Whether generated code must bind ``target`` as a global (not ops/operator/builtin)."""
    qualname = op_qualname(target)
    if qualname is not None and is_qualname_renderable(qualname):
        return False
    return operator_name(target) is None and builtin_name(target) is None


def target_name(target: Any) -> str:
    """The candidate node name for a call target (before uniquing)."""
    if isinstance(target, str):
        return sanitize(target.replace(".", "_"))
    qualname = op_qualname(target)
    if qualname is not None:
        return base_name(qualname)
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):  # a callable instance: 'FakeOp' -> 'fake_op'
        name = _CAMEL.sub("_", type(target).__name__).lower()
    return sanitize(name)


def display_target(target: Any) -> str:
    """How ``str(graph)`` shows a target: 'acg.mul', 'operator.add', 'len', 'my_hook'."""
    if isinstance(target, str):
        return target
    qualname = op_qualname(target)
    if qualname is not None:
        return qualname.replace("::", ".")
    if (name := operator_name(target)) is not None:
        return f"operator.{name}"
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else repr(target)


class Namespace:
    """Hands out unique identifiers: 'mul', 'mul_1', ...; reserved names start at '_1'.

    >>> ns = Namespace(reserved={"x"})
    >>> ns.create("x"), ns.create("x")
    ('x_1', 'x_2')
    """

    def __init__(self, reserved: frozenset[str] | set[str] = RESERVED) -> None:
        self._reserved = reserved
        self._used: set[str] = set()
        self._counters: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._used

    def create(self, candidate: str) -> str:
        """A fresh identifier derived from ``candidate`` (sanitized, suffixed if taken)."""
        base = sanitize(candidate)
        name = base
        if self._taken(name):
            count = self._counters.get(base, 0)
            while self._taken(name):
                count += 1
                name = f"{base}_{count}"
            self._counters[base] = count
        self._used.add(name)
        return name

    def release(self, name: str) -> None:
        """Make ``name`` available again (after a rename)."""
        self._used.discard(name)

    def _taken(self, name: str) -> bool:
        return name in self._used or name in self._reserved
