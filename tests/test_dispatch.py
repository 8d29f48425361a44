"""Dispatcher: schema parsing, registration order independence, dump_state, errors."""
from __future__ import annotations

import itertools
import textwrap

import jax.numpy as jnp
import pytest

import autograd_compile as acg
from autograd_compile.dispatch import DISPATCHER, DispatchKey, Library, SchemaError, parse_schema
from autograd_compile.dispatch.dispatcher import DispatchError

_counter = itertools.count()


def fresh_ns() -> str:
    return f"perm{next(_counter)}"


# -- schema -----------------------------------------------------------------------------

def test_schema_roundtrip_and_fields():
    s = parse_schema("myns::foo.bar(Tensor x, Tensor? y=None, int[] dims=[0, 1], *, "
                     "float alpha=1.0) -> (Tensor, Tensor)")
    assert str(s) == ("myns::foo.bar(Tensor x, Tensor? y=None, int[] dims=[0, 1], *, "
                      "float alpha=1.0) -> (Tensor, Tensor)")
    assert [a.name for a in s.arguments] == ["x", "y", "dims", "alpha"]
    assert [a.kwarg_only for a in s.arguments] == [False, False, False, True]
    assert s.arguments[2].default == (0, 1)
    assert s.returns == ("Tensor", "Tensor")
    assert s.bind((1,), {"alpha": 2.0}) == [1, None, (0, 1), 2.0]


def test_schema_mutable_argument():
    s = parse_schema("ns::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
    assert s.is_mutable and s.arguments[0].mutable and not s.arguments[1].mutable


@pytest.mark.parametrize("bad", ["foo(Tensor x) -> Tensor", "ns::foo(Tensr x) -> Tensor",
                                 "ns::foo(Tensor x, Tensor x) -> Tensor", "ns::foo Tensor x"])
def test_schema_errors(bad):
    with pytest.raises(SchemaError):
        parse_schema(bad)


def test_bind_errors_name_the_op():
    s = parse_schema("ns::foo(Tensor x, int k) -> Tensor")
    with pytest.raises(TypeError, match=r"ns::foo\(\) missing required argument 'k'"):
        s.bind((1,), {})
    with pytest.raises(TypeError, match="unexpected keyword"):
        s.bind((1, 2), {"z": 3})


# -- permutations -----------------------------------------------------------------------

def _kernel_backend(x):
    return x * 2


def _kernel_autograd(x):
    return "autograd"


def _kernel_composite(x):
    return "composite"


def _fallback_fake(op, args, kwargs):
    return "fake"


def _registrations(ns: str):
    """Each entry: a function taking the library dict and returning a handle."""
    return [
        lambda libs: libs["def"].define("foo(Tensor x) -> Tensor", debug="def-site"),
        lambda libs: libs["impl"].impl("foo", _kernel_backend, "Backend", debug="backend-site"),
        lambda libs: libs["impl"].impl("foo", _kernel_autograd, "Autograd", debug="ag-site"),
        lambda libs: libs["impl"].impl("foo", _kernel_composite, "CompositeImplicitAutograd",
                                       debug="composite-site"),
    ]


def _state(ns: str) -> str:
    return DISPATCHER.dump_state(f"{ns}::foo")


def test_every_permutation_of_registrations_gives_the_same_state():
    reference = None
    for order in itertools.permutations(range(4)):
        ns = fresh_ns()
        libs = {"def": Library(ns, "DEF"), "impl": Library(ns, "IMPL")}
        regs = _registrations(ns)
        for i in order:
            regs[i](libs)
            DISPATCHER.check_invariants(f"{ns}::foo")
        state = _state(ns).replace(ns, "NS")
        reference = reference or state
        assert state == reference, f"order {order} differs"
        libs["def"].remove_all()
        libs["impl"].remove_all()
        assert _state(ns) == "(operator not registered)\n"
    assert reference == textwrap.dedent("""\
        name: NS::foo
        schema: NS::foo(Tensor x) -> Tensor  [def-site]
        Autograd: _kernel_autograd [ag-site]
        Backend: _kernel_backend [backend-site]
        CompositeImplicitAutograd: _kernel_composite [composite-site]
        computed table:
          Autocast: fallback autocast_fallback [amp.autocast_fallback]
          PythonMode: fallback python_mode_fallback [modes.python_mode_fallback]
          Python: fallback python_key_fallback [modes.python_key_fallback]
          Autograd: kernel _kernel_autograd [ag-site]
          Fake: composite _kernel_composite [composite-site]
          Backend: kernel _kernel_backend [backend-site]
        """)


def test_every_permutation_of_registrations_and_removals_commutes():
    """Register 4 things and remove 2 of them, in every order where a removal follows
    its registration: the final state equals registering only the 2 that remain."""
    events = [("add", 0), ("add", 1), ("add", 2), ("add", 3), ("remove", 1), ("remove", 3)]
    expected_ns = fresh_ns()
    libs = {"def": Library(expected_ns, "DEF"), "impl": Library(expected_ns, "IMPL")}
    for i in (0, 2):
        _registrations(expected_ns)[i](libs)
    expected = _state(expected_ns).replace(expected_ns, "NS")
    libs["def"].remove_all(), libs["impl"].remove_all()
    checked = 0
    for order in itertools.permutations(events):
        if any(order.index(("remove", i)) < order.index(("add", i)) for i in (1, 3)):
            continue
        ns = fresh_ns()
        libs = {"def": Library(ns, "DEF"), "impl": Library(ns, "IMPL")}
        handles = {}
        for kind, i in order:
            if kind == "add":
                handles[i] = _registrations(ns)[i](libs)
            else:
                handles[i].remove()
            if f"{ns}::foo" in DISPATCHER.ops:
                DISPATCHER.check_invariants(f"{ns}::foo")
        assert _state(ns).replace(ns, "NS") == expected, order
        libs["def"].remove_all(), libs["impl"].remove_all()
        checked += 1
    assert checked == 720 // 4  # each removal after its add: 1/2 * 1/2 of the orders


def test_impl_before_def_is_not_callable_until_defined():
    ns = fresh_ns()
    impl = Library(ns, "IMPL")
    impl.impl("foo", lambda x: x + 1, "Backend")
    with pytest.raises(DispatchError, match="never defined"):
        DISPATCHER.ops[f"{ns}::foo"](acg.ones(1))
    lib = Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor")
    assert getattr(acg.ops, ns).foo(acg.ones(2)).tolist() == [2.0, 2.0]
    impl.remove_all(), lib.remove_all()


# -- failing registrations leave the state untouched -----------------------------------------

def test_failing_registrations_change_nothing():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor", debug="d")
    lib.impl("foo", _kernel_backend, "Backend", debug="b")
    before = _state(ns)
    with pytest.raises(SchemaError, match="already defined"):
        lib.define("foo(Tensor x, Tensor y) -> Tensor")  # schema mismatch / duplicate def
    with pytest.raises(DispatchError, match="already has a kernel for Backend"):
        lib.impl("foo", _kernel_autograd, "Backend")
    with pytest.raises(SchemaError, match="namespace"):
        lib.impl("otherns::foo", _kernel_backend, "Autograd")
    with pytest.raises(ValueError, match="unknown dispatch key"):
        lib.impl("foo", _kernel_backend, "Cuda")
    with pytest.raises(DispatchError, match="already has a DEF library"):
        Library(ns, "DEF")
    with pytest.raises(DispatchError, match="already registered"):
        Library(ns, "FRAGMENT").fallback(_fallback_fake, "Fake")
    assert _state(ns) == before
    DISPATCHER.check_invariants(f"{ns}::foo")
    lib.remove_all()


def test_check_invariants_catches_a_stale_table():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor")
    lib.impl("foo", _kernel_backend, "Backend")
    op = DISPATCHER.ops[f"{ns}::foo"]
    saved = op.table[DispatchKey.Backend]
    op.table[DispatchKey.Backend] = None  # corrupt
    with pytest.raises(AssertionError, match="table entry for Backend is stale"):
        DISPATCHER.check_invariants(op)
    op.table[DispatchKey.Backend] = saved
    DISPATCHER.check_invariants(op)
    lib.remove_all()


# -- keys at call time ------------------------------------------------------------------------

def test_composite_gets_autograd_for_free_and_backend_kernel_wins_at_backend():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("cube(Tensor x) -> Tensor")
    lib.impl("cube", lambda x: x * x * x, "CompositeImplicitAutograd")
    op = DISPATCHER.ops[f"{ns}::cube"]
    x = acg.tensor([2.0, 3.0], requires_grad=True)
    y = op(x)
    y.sum().backward()
    assert x.grad.tolist() == [12.0, 27.0]  # d/dx x^3 = 3x^2, via mul's own formula
    lib.impl("cube", lambda a: jnp.full_like(a, 7.0), "Backend")
    assert op(acg.tensor([2.0])).tolist() == [7.0]  # no grad needed: Backend kernel runs
    lib.remove_all()


def test_fallback_serves_ops_without_their_own_kernel():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor")
    lib.impl("foo", _kernel_backend, "Backend")
    seen = []

    class Probe(acg.DispatchMode):
        def __acg_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.qualname)
            return func(*args, **(kwargs or {}))
    x = acg.ones(2)
    with Probe():
        out = DISPATCHER.ops[f"{ns}::foo"](x)
    assert seen == [f"{ns}::foo"] and out.tolist() == [2.0, 2.0]
    lib.remove_all()


def test_missing_kernel_error_names_the_op_and_key():
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("foo(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match=f"'{ns}::foo'.*'Backend'"):
        DISPATCHER.ops[f"{ns}::foo"](acg.ones(1))
    lib.remove_all()


def test_ops_namespace_overloads():
    assert acg.ops.acg.mul.Tensor is DISPATCHER.ops["acg::mul.Tensor"]
    with pytest.raises(AttributeError):
        acg.ops.acg.mul.nope


def test_composite_serves_backend_with_tensors_under_no_grad():
    """Regression: a composite filling the Backend slot was called with jax arrays."""
    ns = fresh_ns()
    lib = Library(ns, "DEF")
    lib.define("twice_plus(Tensor x) -> Tensor")
    seen = []
    lib.impl("twice_plus", lambda x: seen.append(type(x)) or x * 2 + 1, "CompositeImplicitAutograd")
    with acg.no_grad():
        out = DISPATCHER.ops[f"{ns}::twice_plus"](acg.tensor([1.0, 2.0]))
    assert out.tolist() == [3.0, 5.0] and seen == [acg.Tensor]
    lib.remove_all()
