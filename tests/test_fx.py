"""Tests for the graph IR (autograd_compile.fx)."""
from __future__ import annotations

import collections
import gc
import linecache
import math
import operator
import subprocess
import sys
import textwrap
import traceback
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograd_compile import config
from autograd_compile.fx import (Graph, GraphLintError, GraphModule, Interpreter, Node, Proxy,
                                 TraceError, Tracer, map_aggregate, map_arg, symbolic_trace)


class FakeOp:
    """Looks like a dispatcher op to fx: callable, with a 'ns::name.overload' qualname."""

    def __init__(self, qualname: str, fn, impure: bool = False) -> None:
        self.qualname = qualname
        self.fn = fn
        if impure:
            self._acg_impure = True

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


acg_mul = FakeOp("acg::mul", np.multiply)
acg_add = FakeOp("acg::add", np.add)
acg_sum = FakeOp("acg::sum", np.sum)
acg_sum_dim = FakeOp("acg::sum.dim", lambda x, dim: np.sum(x, axis=dim))


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def mul_sum_graph() -> tuple[Graph, dict[str, Node]]:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    mul = g.call_function(acg_mul, (x, y))
    total = g.call_function(acg_sum, (mul,))
    out = g.output(total)
    return g, {"x": x, "y": y, "mul": mul, "sum": total, "output": out}


XS = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
YS = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.0]])
EXPECTED_MUL_SUM = 0.5 - 2.0 + 6.0 + 12.0 + 0.0 - 12.0  # sum(XS * YS) by hand


# -- printing and code generation ----------------------------------------------------------
def test_str_graph_is_pinned():
    g, _ = mul_sum_graph()
    assert str(g) == dedent("""
        graph():
            %x : placeholder[target=x]
            %y : placeholder[target=y]
            %mul : call_function[target=acg.mul](args = (%x, %y), kwargs = {})
            %sum_1 : call_function[target=acg.sum](args = (%mul,), kwargs = {})
            return %sum_1""")


def test_code_is_pinned_and_runs():
    g, _ = mul_sum_graph()
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, x, y):
            mul = ops.acg.mul(x, y);  x = y = None
            sum_1 = ops.acg.sum(mul);  mul = None
            return sum_1
        """)
    assert gm(XS, YS) == pytest.approx(EXPECTED_MUL_SUM)
    assert gm.forward(XS, YS) == pytest.approx(EXPECTED_MUL_SUM)


def test_op_with_default_and_overload_in_one_graph():
    g = Graph()
    x = g.placeholder("x")
    mul = g.call_function(acg_mul, (x, x))
    whole = g.call_function(acg_sum, (mul,))
    cols = g.call_function(acg_sum_dim, (mul,), {"dim": 0})
    g.output((whole, cols))
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, x):
            mul = ops.acg.mul(x, x);  x = None
            sum_1 = ops.acg.sum(mul)
            sum_dim = ops.acg.sum.dim(mul, dim=0);  mul = None
            return (sum_1, sum_dim)
        """)
    whole_v, cols_v = gm(XS)
    assert whole_v == pytest.approx(1 + 4 + 9 + 16 + 25 + 36)
    assert cols_v.tolist() == [17.0, 29.0, 45.0]


def test_operator_builtin_and_bound_callables_render():
    def my_hook(v):
        return v + 100

    def make_other():
        def my_hook(v):  # same __name__, different function
            return -v
        return my_hook

    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.mul, (x, 3))
    b = g.call_function(my_hook, (a,))
    c = g.call_function(make_other(), (b,))
    n = g.call_function(len, ([c, c],))
    g.output((c, n))
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, x):
            mul = operator.mul(x, 3);  x = None
            my_hook_1 = my_hook(mul);  mul = None
            my_hook_3 = my_hook_2(my_hook_1);  my_hook_1 = None
            len_1 = len([my_hook_3, my_hook_3])
            return (my_hook_3, len_1)
        """)
    assert gm(2) == (-(2 * 3 + 100), 2)
    assert "%my_hook_3 : call_function[target=my_hook_2]" in str(g)


def test_getattr_builtin_renders_by_name():
    g = Graph()
    z = g.placeholder("z")
    g.output(g.call_function(getattr, (z, "imag")))
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, z):
            getattr_1 = getattr(z, 'imag');  z = None
            return getattr_1
        """)
    assert gm(3 + 4j) == 4.0


def test_constants_render_as_literals_or_globals():
    Pair = collections.namedtuple("Pair", "a b")

    def show(*args, **kwargs):
        return args, kwargs

    g = Graph()
    x = g.placeholder("x")
    args = (x, None, True, -3, 2.5, math.inf, "s", b"b", (1,), [x, 2], {"k": x}, slice(1, None),
            Ellipsis, 1 + 2j, np.dtype("float32"), Pair(x, 0))
    g.output(g.call_function(show, args, {"nan": math.nan, "not-ident": 1, "lambda": 2}))
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, x):
            show_1 = show(x, None, True, -3, 2.5, float('inf'), 's', b'b', (1,), [x, 2], {'k': x}, slice(1, None, None), ..., (1+2j), float32, Pair(x, 0), nan=float('nan'), **{'not-ident': 1, 'lambda': 2});  x = None
            return show_1
        """)  # noqa: E501
    out_args, out_kwargs = gm(7)
    assert out_args[:14] == (7, None, True, -3, 2.5, math.inf, "s", b"b", (1,), [7, 2],
                             {"k": 7}, slice(1, None), Ellipsis, 1 + 2j)
    assert out_args[14] is np.dtype("float32")  # bound as a global: the very same object
    assert out_args[15] == Pair(7, 0) and type(out_args[15]) is Pair
    assert math.isnan(out_kwargs["nan"]) and out_kwargs["not-ident"] == 1
    assert out_kwargs["lambda"] == 2


def test_placeholder_defaults_become_default_parameters():
    g = Graph()
    x = g.placeholder("x")
    scale = g.placeholder("scale", default=2.0)
    g.output(g.call_function(operator.mul, (x, scale)))
    gm = GraphModule({}, g)
    assert gm.code.splitlines()[0] == "def forward(self, x, scale=2.0):"
    assert gm(3.0) == 6.0 and gm(3.0, 3.0) == 9.0
    assert Interpreter(gm).run(3.0) == 6.0 and Interpreter(gm).run(3.0, 5.0) == 15.0
    assert str(g).splitlines()[2] == "    %scale : placeholder[target=scale](default=2.0)"


def test_placeholders_always_go_first():
    g = Graph()
    a = g.placeholder("a")
    neg = g.call_function(operator.neg, (a,))
    b = g.placeholder("b")  # added late, still placed after 'a' and before 'neg'
    g.output(g.call_function(operator.add, (neg, b)))
    assert [n.name for n in g.nodes] == ["a", "b", "neg", "add", "output"]
    g.lint()
    assert GraphModule({}, g)(5, 1) == -4


def test_output_containers():
    for value, expected_line, expected in [
        (lambda x: (x,), "return (x,)", (4,)),
        (lambda x: [x, x], "return [x, x]", [4, 4]),
        (lambda x: {"out": x}, "return {'out': x}", {"out": 4}),
        (lambda x: None, "return None", None),
    ]:
        g = Graph()
        x = g.placeholder("x")
        g.output(value(x))
        gm = GraphModule({}, g)
        assert gm.code.splitlines()[-1] == "    " + expected_line
        assert gm(4) == expected


def test_call_method_and_constant_receiver():
    g = Graph()
    s = g.placeholder("s")
    up = g.call_method("upper", (s,))
    g.call_method("bit_length", (255,))  # result unused: emitted as a bare call
    g.output(g.call_method("split", (up,), {"sep": "B", "maxsplit": 1}))
    gm = GraphModule({}, g)
    assert gm.code == dedent("""
        def forward(self, s):
            upper = s.upper();  s = None
            (255).bit_length()
            split = upper.split(sep='B', maxsplit=1);  upper = None
            return split
        """)
    assert gm("abc") == ["A", "C"]
    assert Interpreter(gm).run("abc") == ["A", "C"]


def test_get_attr_from_object_and_dict_roots():
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("layer.weight")
    g.output(g.call_function(operator.mul, (x, w)))
    root = types.SimpleNamespace(layer=types.SimpleNamespace(weight=5))
    gm = GraphModule(root, g)
    assert gm.code == dedent("""
        def forward(self, x):
            layer_weight = self.layer.weight
            mul = operator.mul(x, layer_weight);  x = layer_weight = None
            return mul
        """)
    assert gm(3) == 15
    root.layer.weight = 7  # the module shares the root's objects
    assert gm(3) == 21
    assert GraphModule({"layer.weight": 11}, g)(3) == 33
    assert Interpreter(GraphModule({"layer": types.SimpleNamespace(weight=2)}, g)).run(3) == 6
    with pytest.raises(AttributeError, match="layer"):
        GraphModule({}, g)


def test_get_attr_clashing_with_module_attribute_is_rejected():
    g = Graph()
    g.output(g.get_attr("graph"))
    with pytest.raises(ValueError, match="clashes"):
        GraphModule({"graph": 1}, g)


def test_class_name_and_print_readable(capsys):
    g, _ = mul_sum_graph()
    gm = GraphModule({}, g, class_name="Backward")
    assert type(gm).__name__ == "Backward" and isinstance(gm, GraphModule)
    text = gm.print_readable()
    expected = dedent("""
        class Backward:
            def forward(self, x, y):
                mul = ops.acg.mul(x, y);  x = y = None
                sum_1 = ops.acg.sum(mul);  mul = None
                return sum_1
        """)
    assert text == expected
    assert capsys.readouterr().out == expected
    assert gm.print_readable(print_output=False) == expected
    assert capsys.readouterr().out == ""


def test_recompile_after_editing_the_graph():
    g, n = mul_sum_graph()
    gm = GraphModule({}, g)
    other = GraphModule({}, mul_sum_graph()[0])  # per-instance classes: edits stay local
    with g.inserting_before(n["mul"]):
        add = g.call_function(acg_add, (n["x"], n["y"]))
    n["mul"].replace_all_uses_with(add)
    g.erase_node(n["mul"])
    gm.recompile()
    assert gm.code == dedent("""
        def forward(self, x, y):
            add = ops.acg.add(x, y);  x = y = None
            sum_1 = ops.acg.sum(add);  add = None
            return sum_1
        """)
    assert gm(XS, YS) == pytest.approx(np.sum(XS) + np.sum(YS))
    assert other(XS, YS) == pytest.approx(EXPECTED_MUL_SUM)


def test_graph_setter_recompiles():
    g1, _ = mul_sum_graph()
    gm = GraphModule({}, g1)
    g2 = Graph()
    x, _ = g2.placeholder("x"), g2.placeholder("y")
    g2.output(x)
    gm.graph = g2
    assert gm(1, 2) == 1 and gm.graph is g2


def test_ops_global_falls_back_to_dispatcher_lazily():
    g, _ = mul_sum_graph()
    ops_tree = g.python_code().globals["ops"]
    assert ops_tree.acg.mul is acg_mul and ops_tree.acg.sum is acg_sum
    from autograd_compile.dispatch import ops as real_ops  # a name the graph never used
    assert type(ops_tree.other_ns.some_op) is type(real_ops.other_ns.some_op)


def test_real_dispatcher_ops_render_and_run():
    import autograd_compile as acg
    from autograd_compile.dispatch import DISPATCHER, Library
    from autograd_compile.dispatch import ops as real_ops

    lib = Library("fx_test_ns", "DEF")
    try:
        lib.define("scale(Tensor x, float s) -> Tensor")
        lib.define("scale.twice(Tensor x) -> Tensor")
        lib.impl("scale", lambda x, s: x * s, "Backend")
        lib.impl("scale.twice", lambda x: x * 2, "Backend")
        scale = DISPATCHER.ops["fx_test_ns::scale"]
        twice = DISPATCHER.ops["fx_test_ns::scale.twice"]
        g = Graph()
        x = g.placeholder("x")
        g.output(g.call_function(twice, (g.call_function(scale, (x, 3.0)),)))
        gm = GraphModule({}, g)
        assert gm.code == dedent("""
            def forward(self, x):
                scale = ops.fx_test_ns.scale(x, 3.0);  x = None
                scale_twice = ops.fx_test_ns.scale.twice(scale);  scale = None
                return scale_twice
            """)
        # the spelling in the code names the same op in the real ops namespace
        assert eval("ops.fx_test_ns.scale.twice", {"ops": real_ops}) is twice
        assert gm(acg.tensor([1.0, 2.0])).tolist() == [6.0, 12.0]
    finally:
        lib.remove_all()


def test_fx_import_does_not_import_the_dispatcher():
    # a bare parent package, so only what fx itself imports gets loaded
    code = textwrap.dedent(f"""
        import sys, types
        pkg = types.ModuleType("autograd_compile")
        pkg.__path__ = [{str(Path(config.__file__).parent)!r}]
        sys.modules["autograd_compile"] = pkg
        import autograd_compile.fx
        print(sorted(m for m in sys.modules if m.startswith("autograd_compile.")))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = eval(out)
    assert "autograd_compile.fx.graph_module" in loaded
    assert [m for m in loaded if not m.startswith("autograd_compile.fx")] == [
        "autograd_compile.config"]


# -- tracebacks ---------------------------------------------------------------------------------
def explode(value):
    raise ValueError(f"boom at {value}")


def test_traceback_shows_the_generated_line():
    g = Graph()
    x = g.placeholder("x")
    neg = g.call_function(operator.neg, (x,))
    g.output(g.call_function(explode, (neg,)))
    gm = GraphModule({}, g)
    try:
        gm(3)
    except ValueError:
        tb = traceback.format_exc()
    else:
        pytest.fail("the graph should have raised")
    assert "boom at -3" in tb
    assert "explode_1 = explode(neg);  neg = None" in tb
    assert 'File "<acg_graph_' in tb


def test_linecache_entry_is_dropped_with_the_module():
    g, _ = mul_sum_graph()
    gm = GraphModule({}, g)
    filename = type(gm).forward.__code__.co_filename
    assert linecache.getline(filename, 2).strip().startswith("mul = ops.acg.mul(x, y)")
    del gm
    gc.collect()
    assert filename not in linecache.cache


def test_interpreter_adds_the_failing_node_to_the_error():
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(explode, (x,)))
    with pytest.raises(ValueError) as info:
        Interpreter(g).run(1)
    assert info.value.__notes__ == [
        "while running node %explode_1 : call_function[target=explode](args = (%x,), "
        "kwargs = {})"]


# -- Interpreter --------------------------------------------------------------------------------
def test_interpreter_matches_direct_call_and_module():
    g, _ = mul_sum_graph()
    gm = GraphModule({}, g)
    direct = np.sum(np.multiply(XS, YS))
    assert Interpreter(gm).run(XS, YS) == pytest.approx(direct)
    assert Interpreter(g).run(XS, YS) == pytest.approx(gm(XS, YS))


def test_interpreter_subclass_overrides_one_handler():
    class MulIsAdd(Interpreter):
        def call_function(self, node, args, kwargs):
            if node.target is acg_mul:
                return np.add(*args)
            return super().call_function(node, args, kwargs)

    g, _ = mul_sum_graph()
    assert MulIsAdd(g).run(XS, YS) == pytest.approx(np.sum(XS) + np.sum(YS))


def test_interpreter_frees_values_after_last_use():
    live: list[tuple[str, list[str]]] = []

    class Spy(Interpreter):
        def run_node(self, node):
            live.append((node.name, sorted(n.name for n in self.env)))
            return super().run_node(node)

    g, _ = mul_sum_graph()
    Spy(g).run(XS, YS)
    assert live == [("x", []), ("y", ["x"]), ("mul", ["x", "y"]), ("sum_1", ["mul"]),
                    ("output", ["sum_1"])]
    live.clear()
    Spy(g, garbage_collect_values=False).run(XS, YS)
    assert live[-1] == ("output", ["mul", "sum_1", "x", "y"])


def test_interpreter_argument_errors():
    g, _ = mul_sum_graph()
    with pytest.raises(TypeError, match="missing a value for input %y"):
        Interpreter(g).run(1)
    with pytest.raises(TypeError, match="takes 2 inputs but 3 were given"):
        Interpreter(g).run(1, 2, 3)


# -- users bookkeeping ------------------------------------------------------------------------
def test_users_follow_args_and_kwargs_setters():
    g = Graph()
    a, b, c = g.placeholder("a"), g.placeholder("b"), g.placeholder("c")
    n = g.call_function(max, (a, [b, {"k": a}]))
    assert list(a.users) == [n] and list(b.users) == [n] and not c.users
    assert n.all_input_nodes == [a, b]
    n.args = (c,)
    assert not a.users and not b.users and list(c.users) == [n]
    n.kwargs = {"key": b, "default": (a,)}
    assert list(b.users) == [n] and list(a.users) == [n]
    assert n.all_input_nodes == [c, b, a]
    n.kwargs = {}
    assert not a.users and not b.users and list(c.users) == [n]


def test_args_are_copied_not_aliased():
    g = Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    items = [a]
    n = g.call_function(sum, (items,))
    items.append(b)  # mutating the caller's list must not change the graph silently
    assert n.args == ([a],) and not b.users


def test_replace_all_uses_with():
    g = Graph()
    x = g.placeholder("x")
    neg = g.call_function(operator.neg, (x,))
    u1 = g.call_function(operator.add, (neg, neg))
    u2 = g.call_function(operator.mul, (x,), {"other": neg})
    g.output((u1, u2))
    with g.inserting_after(neg):
        pos = g.call_function(operator.pos, (neg,))  # reads neg; must keep reading it
    changed = neg.replace_all_uses_with(pos)
    assert changed == [u1, u2]
    assert list(neg.users) == [pos]
    assert list(pos.users) == [u1, u2]
    assert u1.args == (pos, pos) and u2.kwargs == {"other": pos}
    assert list(x.users) == [neg, u2]
    g.lint()


def test_replace_input_with():
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    n = g.call_function(operator.sub, (x, x), {"z": [x]})
    n.replace_input_with(x, y)
    assert n.args == (y, y) and n.kwargs == {"z": [y]}
    assert not x.users and list(y.users) == [n]


def test_erase_node_requires_no_users():
    g, n = mul_sum_graph()
    with pytest.raises(RuntimeError, match=r"cannot erase node %mul: still used by %sum_1"):
        g.erase_node(n["mul"])
    n["output"].args = (n["x"],)
    g.erase_node(n["sum"])
    assert not n["mul"].users
    g.erase_node(n["mul"])
    assert list(n["x"].users) == [n["output"]] and not n["y"].users
    assert [m.name for m in g.nodes] == ["x", "y", "output"] and len(g.nodes) == 3
    with pytest.raises(ValueError, match="not in this graph"):
        g.erase_node(n["mul"])
    g.lint()


def test_inputs_from_another_graph_or_erased_are_rejected():
    g1, g2 = Graph(), Graph()
    x1 = g1.placeholder("x")
    with pytest.raises(ValueError, match="input %x belongs to another graph"):
        g2.call_function(operator.neg, (x1,))
    dead = g1.call_function(operator.neg, (x1,))
    g1.erase_node(dead)
    with pytest.raises(ValueError, match="input %neg was erased"):
        g1.call_function(operator.pos, (dead,))


def test_erasing_while_iterating_is_safe():
    g = Graph()
    x = g.placeholder("x")
    for _ in range(4):
        x = g.call_function(operator.neg, (x,))
    g.output(x)
    seen = []
    for node in g.nodes:
        seen.append(node.name)
        if node.name == "neg_1":
            node.replace_all_uses_with(node.args[0])
            g.erase_node(node)
    assert seen == ["x", "neg", "neg_1", "neg_2", "neg_3", "output"]
    assert [n.name for n in g.nodes] == ["x", "neg", "neg_2", "neg_3", "output"]
    assert [n.name for n in reversed(g.nodes)] == ["output", "neg_3", "neg_2", "neg", "x"]
    assert GraphModule({}, g)(5) == -5  # three negations left


# -- graph structure ---------------------------------------------------------------------------
def test_inserting_after_keeps_program_order_and_before_works():
    g = Graph()
    x = g.placeholder("x")
    last = g.call_function(operator.neg, (x,))
    g.output(last)
    with g.inserting_after(x):
        a = g.call_function(operator.add, (x, 1))
        b = g.call_function(operator.mul, (a, 2))
    with g.inserting_before(last):
        c = g.call_function(operator.sub, (b, 3))
    last.args = (c,)
    assert [n.name for n in g.nodes] == ["x", "add", "mul", "sub", "neg", "output"]
    g.lint()
    assert GraphModule({}, g)(4) == -((4 + 1) * 2 - 3)
    with g.inserting_before(None):  # before everything
        g.call_function(print, ())
    assert next(iter(g.nodes)).name == "print_1"


def test_insert_point_survives_erasing_its_anchor():
    g = Graph()
    x = g.placeholder("x")
    tmp = g.call_function(operator.neg, (x,))
    g.output(x)
    with g.inserting_after(tmp):
        g.erase_node(tmp)
        n = g.call_function(operator.pos, (x,))
    assert [m.name for m in g.nodes] == ["x", "pos", "output"] and n.prev is x


def test_erasing_an_outer_blocks_anchor_is_reported():
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.neg, (x,))
    b = g.call_function(operator.pos, (x,))
    g.output(b)
    with g.inserting_after(a):
        with g.inserting_after(b):
            g.erase_node(a)
        with pytest.raises(RuntimeError, match="insertion point %neg was erased"):
            g.call_function(operator.abs, (x,))
    g.lint()


def test_single_output_stays_last():
    g, n = mul_sum_graph()
    with pytest.raises(RuntimeError, match="already has an output"):
        g.output(n["x"])
    with pytest.raises(ValueError, match="after the output"):
        with g.inserting_after(n["output"]):
            pass
    late = g.call_function(operator.neg, (n["x"],))  # default point: before the output
    assert late.next is n["output"]
    assert not n["x"].users.keys() - {n["mul"], late}


def test_find_nodes():
    g, n = mul_sum_graph()
    assert g.find_nodes(op="placeholder") == [n["x"], n["y"]]
    assert g.find_nodes(target=acg_sum) == [n["sum"]]
    assert g.find_nodes(op="call_function", target=acg_mul) == [n["mul"]]
    assert g.find_nodes(op="get_attr") == []


def test_create_node_validates_op_and_target():
    g = Graph()
    with pytest.raises(ValueError, match="unknown node op 'call'"):
        g.create_node("call", operator.neg)
    with pytest.raises(TypeError, match="must be callable"):
        g.call_function("neg")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method name"):
        g.call_method("not a method", ())
    with pytest.raises(ValueError, match="dotted attribute path"):
        g.get_attr("a..b")
    with pytest.raises(ValueError, match="method name"):
        g.call_method("class", (1,))
    with pytest.raises(ValueError, match="needs its receiver"):
        g.call_method("upper", ())
    assert len(g.nodes) == 0


def test_map_arg_and_map_aggregate():
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    nested = (x, [1, {"k": y}], slice(x, None))
    names = map_arg(nested, lambda n: n.name)
    assert names == ("x", [1, {"k": "y"}], slice("x", None, None))
    assert map_aggregate((1, [2, {"k": 3}]), lambda v: v * 10) == (10, [20, {"k": 30}])


# -- naming ---------------------------------------------------------------------------------
def test_unique_readable_names():
    class Callable:
        def __call__(self, *a):
            return a

    def lst(*a):
        return list(a)

    lst.__name__ = "list"
    cls_fn = lambda: 0  # noqa: E731
    cls_fn.__name__ = "class"
    g = Graph()
    p = g.placeholder("list")            # builtin -> suffixed
    q = g.placeholder("x")
    q2 = g.placeholder("x")              # duplicate explicit name
    s1 = g.call_function(acg_sum, (p,))  # 'sum' is a builtin
    s2 = g.call_function(acg_sum, (p,))
    sd = g.call_function(acg_sum_dim, (p,), {"dim": 0})
    m1 = g.call_function(operator.mul, (q, q2))
    m2 = g.call_function(operator.mul, (m1, q2))
    m3 = g.call_function(operator.mul, (m2, q2))
    kw = g.call_function(cls_fn, ())     # keyword 'class'
    inst = g.call_function(Callable(), (q,))
    own = g.call_function(operator.add, (q, q), name="self")  # reserved by codegen
    got = [n.name for n in (p, q, q2, s1, s2, sd, m1, m2, m3, kw, inst, own)]
    assert got == ["list_1", "x", "x_1", "sum_1", "sum_2", "sum_dim", "mul", "mul_1", "mul_2",
                   "class_2", "callable_2", "self_1"]
    g.output((s1, s2, sd, m3, kw, inst, own))
    g.lint()
    gm = GraphModule({}, g)
    assert gm([1.0, 2.0], 2, 3)[:4] == (3.0, 3.0, 3.0, 2 * 3 * 3 * 3)


def test_rename_keeps_names_unique():
    g, n = mul_sum_graph()
    n["mul"].name = "x"
    assert n["mul"].name == "x_1"
    n["sum"].name = "total"
    assert n["sum"].name == "total"
    g.lint()
    assert GraphModule({}, g).code.splitlines()[1].startswith("    x_1 = ops.acg.mul(x, y)")


# -- dead code elimination ----------------------------------------------------------------------
def test_dce_removes_unused_pure_nodes_and_keeps_impure():
    log = []
    record = FakeOp("acg::record", log.append, impure=True)
    g = Graph()
    x = g.placeholder("x")
    unused = g.placeholder("unused")
    a = g.call_function(operator.neg, (x,))
    b = g.call_function(operator.mul, (a, 2))         # chain a -> b, nothing reads b
    g.call_function(record, (x,))                     # impure through the target
    marked = g.call_function(print, (x,), {"end": ""})
    marked.meta["impure"] = True                      # impure through meta
    g.call_method("append", (unused, 1))              # methods may mutate: kept
    g.get_attr("w")                                   # unused get_attr: removed
    keep = g.call_function(operator.add, (x, 1))
    g.output(keep)
    assert g.eliminate_dead_code() is True
    assert [n.name for n in g.nodes] == ["x", "unused", "record", "print_1", "append", "add",
                                         "output"]
    assert not x.users.keys() & {a, b}
    assert g.eliminate_dead_code() is False
    g.lint()


# -- lint ------------------------------------------------------------------------------------
def lint_message(g: Graph) -> str:
    with pytest.raises(GraphLintError) as info:
        g.lint()
    assert isinstance(info.value, RuntimeError)
    return str(info.value).splitlines()[0]


def chain_graph() -> tuple[Graph, Node, Node, Node]:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.neg, (x,))
    b = g.call_function(operator.pos, (a,))
    g.output(b)
    return g, x, a, b


def force_args(node: Node, *args: Node) -> None:
    """Corrupt on purpose: set args and users without the setter's checks."""
    node._args = args
    node._inputs = dict.fromkeys(args)
    for arg in args:
        arg.users[node] = None


def test_lint_accepts_valid_graphs():
    chain_graph()[0].lint()
    mul_sum_graph()[0].lint()


def test_lint_use_before_def():
    g, x, a, b = chain_graph()
    x.users.pop(a)
    force_args(a, b)
    assert lint_message(g) == "node %neg: input %pos is used before it is defined"


def test_lint_node_from_another_graph():
    g, x, a, b = chain_graph()
    foreign = Graph().placeholder("foreign")
    force_args(b, a, foreign)
    assert lint_message(g) == "node %pos: input %foreign belongs to another graph"


def test_lint_broken_users_map():
    g, x, a, b = chain_graph()
    del x.users[a]
    assert lint_message(g) == "node %neg: reads %x but is missing from %x.users"
    g, x, a, b = chain_graph()
    x.users[b] = None  # b does not read x
    assert lint_message(g) == "node %x: users lists %pos, which does not read this node"


def test_lint_stale_input_cache():
    g, x, a, b = chain_graph()
    b._args = (x,)  # args changed behind the setter's back; users patched to match
    del a.users[b]
    x.users[b] = None
    assert lint_message(g) == "node %pos: cached input nodes disagree with args/kwargs"


def test_lint_missing_output():
    g, x, a, b = chain_graph()
    g.erase_node(next(iter(reversed(g.nodes))))
    assert lint_message(g) == "graph has no output node"


def test_lint_output_not_last_and_placeholder_order():
    g, x, a, b = chain_graph()
    g._link_after(g._tail, Node(g, "late", "call_function", operator.neg, (x,)))
    assert lint_message(g) == "node %output: output node is not last (followed by %late)"
    g, x, a, b = chain_graph()
    g._link_after(a, Node(g, "z", "placeholder", "z"))
    assert lint_message(g) == ("node %z: placeholder comes after non-placeholder node %neg "
                               "(placeholders must be first)")


def test_lint_duplicate_names():
    g, x, a, b = chain_graph()
    b._name = "neg"
    assert lint_message(g) == "node %neg: duplicate name 'neg' (also used by an earlier node)"


def test_lint_broken_links():
    g, x, a, b = chain_graph()
    b.prev = x
    assert lint_message(g) == "node %pos: prev link is x, expected neg"


def test_lint_message_includes_the_node_line():
    g, x, a, b = chain_graph()
    b._name = "neg"
    with pytest.raises(GraphLintError) as info:
        g.lint()
    assert str(info.value).splitlines()[1].strip() == (
        "%neg : call_function[target=operator.pos](args = (%neg,), kwargs = {})")


def test_acg_check_lints_after_compile_and_passes(monkeypatch):
    g, x, a, b = chain_graph()
    b._name = "neg"
    monkeypatch.setattr(config, "CHECK", False)
    GraphModule({}, g)  # unchecked: compiles (and would run) despite the duplicate
    g.eliminate_dead_code()
    monkeypatch.setattr(config, "CHECK", True)
    with pytest.raises(GraphLintError, match="duplicate name"):
        GraphModule({}, g)
    with pytest.raises(GraphLintError, match="duplicate name"):
        g.eliminate_dead_code()


# -- Proxy / tracing ---------------------------------------------------------------------------
def test_symbolic_trace_arithmetic():
    def f(x, y):
        return (x * y + 2) / y - x ** 2

    gm = symbolic_trace(f)
    assert gm.code == dedent("""
        def forward(self, x, y):
            mul = operator.mul(x, y)
            add = operator.add(mul, 2);  mul = None
            truediv = operator.truediv(add, y);  add = y = None
            pow_1 = operator.pow(x, 2);  x = None
            sub = operator.sub(truediv, pow_1);  truediv = pow_1 = None
            return sub
        """)
    for x, y in [(3.0, 4.0), (-1.5, 0.5)]:
        assert gm(x, y) == f(x, y)
        assert Interpreter(gm).run(x, y) == f(x, y)


def test_symbolic_trace_reflected_unary_compare_getitem_method():
    def f(v, k=2):
        w = 10 - v[0] // k % 3
        return (-w, abs(w), w <= 4, 1 == w, v.count(k), 2 ** k, ~k)

    gm = symbolic_trace(f)
    assert gm.code == dedent("""
        def forward(self, v, k=2):
            getitem = operator.getitem(v, 0)
            floordiv = operator.floordiv(getitem, k);  getitem = None
            mod = operator.mod(floordiv, 3);  floordiv = None
            sub = operator.sub(10, mod);  mod = None
            neg = operator.neg(sub)
            abs_1 = operator.abs(sub)
            le = operator.le(sub, 4)
            eq = operator.eq(sub, 1);  sub = None
            count = v.count(k);  v = None
            pow_1 = operator.pow(2, k)
            invert = operator.invert(k);  k = None
            return (neg, abs_1, le, eq, count, pow_1, invert)
        """)
    for v, k in [([9, 2, 2], 2), ([7, 3], 3)]:
        assert gm(v, k) == f(v, k)
    assert gm([9, 2, 2]) == f([9, 2, 2])


def test_proxy_rejects_data_dependent_control_flow():
    def branch(x):
        return x if x > 0 else -x

    with pytest.raises(TraceError, match="data-dependent control flow"):
        symbolic_trace(branch)
    t = Tracer()
    p = t.proxy(t.graph.placeholder("p"))
    for action in (len, list, bool, lambda q: 1 in q, lambda q: range(q)):
        with pytest.raises(TraceError, match="cannot be used"):
            action(p)


def test_proxy_getattr_is_conservative():
    t = Tracer()
    p = t.proxy(t.graph.placeholder("p"))
    assert not hasattr(p, "__array__") and not hasattr(p, "_private")
    assert t.graph.find_nodes(op="call_method") == []  # probing recorded nothing
    q = p.reshape(2, -1)
    assert isinstance(q, Proxy)
    assert q.node.format_node() == (
        "%reshape : call_method[target=reshape](args = (%p, 2, -1), kwargs = {})")
    assert {p: 1}[p] == 1  # hashable despite __eq__


def test_tracer_create_proxy_with_op_and_nested_args():
    t = Tracer()
    x = t.proxy(t.graph.placeholder("x"))
    y = t.create_proxy("call_function", acg_sum_dim, ([x, x],), {"dim": 0})
    assert y.node.args == ([x.node, x.node],) and list(x.node.users) == [y.node]
    t.graph.output(y.node)
    out = GraphModule({}, t.graph)(np.array([1.0, 2.0]))
    assert out.tolist() == [2.0, 4.0]
    z = t.create_proxy("call_function", operator.neg, (y.node,))  # raw Nodes pass through
    assert z.node.args == (y.node,)
    other = Tracer()
    with pytest.raises(TraceError, match="different trace"):
        other.create_proxy("call_function", operator.neg, (x,))


def test_symbolic_trace_rejects_varargs():
    with pytest.raises(TraceError, match="only plain positional"):
        symbolic_trace(lambda *xs: xs)


# -- property test: random DAGs agree across direct eval, codegen, Interpreter and DCE ----------
BINOPS = [operator.add, operator.sub, operator.mul, max, min]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_graphs_agree(data):
    n_inputs = data.draw(st.integers(1, 3))
    values = data.draw(st.lists(st.integers(-5, 5), min_size=n_inputs, max_size=n_inputs))
    g = Graph()
    nodes = [g.placeholder(f"in{i}") for i in range(n_inputs)]
    direct = list(values)
    for _ in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(BINOPS))
        i = data.draw(st.integers(0, len(nodes) - 1))
        j = data.draw(st.integers(0, len(nodes) - 1))
        nodes.append(g.call_function(op, (nodes[i], nodes[j])))
        direct.append(op(direct[i], direct[j]))
    picks = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=3))
    g.output(tuple(nodes[k] for k in picks))
    expected = tuple(direct[k] for k in picks)
    g.lint()
    assert GraphModule({}, g)(*values) == expected
    assert Interpreter(g).run(*values) == expected
    g.eliminate_dead_code()
    g.lint()
    assert all(n.users or n.op in ("placeholder", "output") for n in g.nodes)
    assert GraphModule({}, g)(*values) == expected
