"""Property-based tests of the xacro expression evaluator (robodyn._xacro_eval): random
expression trees with attribute access, calls, comprehensions, lambdas, f-strings, walrus,
unicode and escapes, around payloads that append to a sentinel when Python's eval runs them.
Nothing outside the allow-list runs: the sentinel stays empty, and every outcome is a plain
value or an ExpressionError. Arithmetic made of allowed parts equals Python's own result."""

import builtins
import math
import time
from xml.sax.saxutils import quoteattr

import pytest

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("xacrodoc")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import robodyn.io.urdf as urdf  # noqa: E402
from robodyn.io.sources import expand_xacro  # noqa: E402


def evaluator():
    """(evaluate, ExpressionError) of robodyn._xacro_eval."""
    from robodyn.io._xacro_eval import ExpressionError, evaluate

    return evaluate, ExpressionError

SENTINEL = "ROBODYN_FUZZ_SENTINEL"
# each appends to builtins.ROBODYN_FUZZ_SENTINEL when Python's eval runs it with builtins
PAYLOADS = [
    f"{SENTINEL}.append(1)",
    f"__import__('builtins').{SENTINEL}.append(1)",
    f"[c()._module.__builtins__['{SENTINEL}'].append(1) for x in [()] for c in "
    "x.__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings']",
    f"(lambda: {SENTINEL}.append(1))()",
    f"f'{{{SENTINEL}.append(1)}}'",
    f"getattr({SENTINEL}, 'append')(1)",
    "\uff32\uff2f\uff22\uff2f\uff24\uff39\uff2e_FUZZ_SENTINEL.append(1)",  # NFKC: ROBODYN
    f"eval('{SENTINEL}.append(1)')",
    "exec('\\x52OBODYN_FUZZ_SENTINEL.append(1)')",
    f"[{SENTINEL}.append(1) for _ in 'a']",
    f"(s := {SENTINEL}).append(1)",
    f"{{k: {SENTINEL}.append(1) for k in 'a'}}",
    f"next({SENTINEL}.append(1) for _ in 'a')",
    f"vars(builtins)['{SENTINEL}'].append(1) if (builtins := __import__('builtins')) else 0",
    f"{SENTINEL}.__getattribute__('append')(1)",
]
NAMES = ["x", "ns", "pi", "math", "sin", "radians", "str", "len", "True", SENTINEL,
         "__import__", "getattr", "eval", "open", "type", "python", "xacro", "__builtins__"]
ATTRIBUTES = ["__class__", "__globals__", "__dict__", "__base__", "__subclasses__", "append",
              "real", "pi", "sin", "w", "join", "format", "_module", "__builtins__", "mro"]


@pytest.fixture(autouse=True)
def sentinel():
    box = []
    setattr(builtins, SENTINEL, box)
    yield box
    delattr(builtins, SENTINEL)


def test_every_payload_is_live_under_pythons_eval(sentinel):
    """The payloads are real: Python's eval with builtins runs each one."""
    for i, payload in enumerate(PAYLOADS, 1):
        eval(payload, {})  # noqa: S307 - the point of the check
        assert len(sentinel) == i, payload


def symbols():
    """A xacro scope as the expansion passes it: a Table with a namespace inside."""
    import xacro

    table = xacro.Table(xacro._global_symbols)
    table._setitem("x", 2.0, unevaluated=False)
    ns = xacro.NameSpace(parent=table)
    ns._setitem("w", 0.5, unevaluated=False)
    table._setitem("ns", ns, unevaluated=False)
    return table


def lookup(table):
    import xacro

    def get(name):
        t = table
        while isinstance(t, xacro.Table):
            if dict.__contains__(t, name):
                return t[name]
            t = t.parent
        raise KeyError(name)
    return get


def literal(draw_text):
    return st.one_of(
        st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=False).map(repr),
        draw_text.map(repr),  # repr escapes: \x.., \u...., \N is not produced but allowed
        st.sampled_from(["'\\x5f\\x5fimport\\x5f\\x5f'", "'\\N{LOW LINE}\\N{LOW LINE}'",
                         "b'x'", "1j", "...", "None"]))


LEAVES = st.one_of(literal(st.text(max_size=6)), st.sampled_from(NAMES),
                   st.sampled_from(PAYLOADS))


def extend(inner):
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<<", "==",
                                          "<", "in", "and", "or", "is"]), inner)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda a: f"(-{a})"), inner.map(lambda a: f"(not {a})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(inner, st.sampled_from(ATTRIBUTES)).map(lambda t: f"({t[0]}).{t[1]}"),
        st.tuples(inner, st.lists(inner, max_size=2))
        .map(lambda t: f"({t[0]})({', '.join(t[1])})"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]})[{t[1]}]"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]} for _v in {t[1]}]"),
        inner.map(lambda a: f"(lambda: {a})()"),
        inner.map(lambda a: f"f'{{{a}}}'"),
        inner.map(lambda a: f"(_w := {a})"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}]"),
        st.tuples(inner, inner).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]})[{t[1]}:]"),
    )


EXPRESSIONS = st.recursive(LEAVES, extend, max_leaves=12)
PLAIN = (bool, int, float, str, list, tuple, dict, type(None))


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(EXPRESSIONS)
def test_random_expressions_run_nothing_outside_the_allow_list(sentinel, expression):
    evaluate, ExpressionError = evaluator()
    table = symbols()
    try:
        value = evaluate(expression, lookup(table), max_size=10_000,
                         deadline=time.monotonic() + 5.0)
    except ExpressionError:
        pass
    else:
        assert isinstance(value, PLAIN) or callable(value) and value in (
            math.sin, math.radians, str, len) or hasattr(value, "parent") \
            or isinstance(value, dict), (expression, value)
    assert sentinel == [], expression


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(EXPRESSIONS.filter(lambda e: "}" not in e and "$" not in e))
def test_random_expressions_in_a_xacro_file_run_nothing(sentinel, tmp_path_factory, expression):
    """The same through the whole expansion (a ${...} cannot hold a '}': xacro's lexer ends
    the expression there)."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "fuzz.urdf.xacro"
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">\n'
                    '  <xacro:property name="x" value="2.0"/>\n'
                    f"  <link name={quoteattr('${' + expression + '}')}/>\n</robot>\n")
    try:
        expand_xacro(str(path), None)
    except urdf.URDFError as e:
        assert str(e).startswith(f"{path}: xacro: ") and "\n" not in str(e)
    assert sentinel == [], expression


NUMBERS = st.one_of(st.integers(-1000, 1000).map(str),
                    st.floats(-1e3, 1e3, allow_nan=False).map(repr))
ARITHMETIC = st.recursive(
    NUMBERS | st.sampled_from(["pi", "x"]),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "<", "==", ">="]), inner)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda a: f"(-{a})"),
        st.tuples(st.sampled_from(["sin", "cos", "radians", "abs", "math.cos"]), inner)
        .map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})")),
    max_leaves=10)


@settings(max_examples=500, deadline=None)
@given(ARITHMETIC)
def test_allowed_arithmetic_equals_pythons(expression):
    """An independent oracle: Python's eval over the same names gives the same value (or
    fails where the evaluator fails)."""
    evaluate, ExpressionError = evaluator()
    names = {"__builtins__": {}, "pi": math.pi, "x": 2.0, "sin": math.sin, "cos": math.cos,
             "radians": math.radians, "abs": abs, "math": math}
    try:
        expected = eval(expression, names)  # noqa: S307 - numbers only, no builtins
    except (ArithmeticError, ValueError):
        expected = None
    try:
        got = evaluate(expression, lambda n: {"x": 2.0}[n], max_size=10_000,
                       deadline=time.monotonic() + 5.0)
    except ExpressionError:
        got = None
    if expected is None or got is None:
        assert expected is None and got is None, expression
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected or math.isclose(got, expected, rel_tol=1e-12), expression
