"""The safe arithmetic parser (hypothesis fuzzing) and the calculator environment."""
import builtins
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.arith import CalcError, evaluate, format_number, parse_number
from reference_impls.envs.calculator import FAMILIES, CalculatorConfig, CalculatorEnv


@pytest.mark.parametrize("expr,value", [
    ("2+3*4", 14), ("(2+3)*4", 20), ("-(-3)", 3), ("7/2", Fraction(7, 2)), ("0.1+0.2", Fraction(3, 10)),
    (" 10 - 2 - 3 ", 5), ("2*-3", -6), ("((1))", 1), (".5*4", 2), ("+4", 4),
])
def test_evaluates(expr, value):
    assert evaluate(expr) == value


@pytest.mark.parametrize("expr", [
    "__import__('os')", "__import__('os').system('echo hi')", "os.system('x')", "2**3", "1/0", "", "()", "(1",
    "1)", "1..2", "9" * 20, "999999999999*999999999999", "(" * 200 + "1" + ")" * 200, "-" * 100 + "1",
    "1 2", "lambda: 1", "[1]", "1e5", "2 // 3", "1/3/7/11/13/17/19/23/29/31/37/41/43",
])
def test_refuses(expr):
    with pytest.raises(CalcError):
        evaluate(expr)


_TIME_LIMIT_S = 0.1


def _check(text):
    t0 = time.perf_counter()
    try:
        value = evaluate(text)
        assert isinstance(value, Fraction)
    except CalcError:
        pass  # the only exception the parser documents
    assert time.perf_counter() - t0 < _TIME_LIMIT_S


@pytest.fixture
def no_eval(monkeypatch):
    """Anything that would execute code fails loudly while the parser runs."""
    def boom(*a, **k):
        raise AssertionError("code execution attempted")

    for name in ("eval", "exec", "compile"):  # (patching __import__ would break pytest's own teardown)
        monkeypatch.setattr(builtins, name, boom)
    yield


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_any_text(text):
    _check(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.+-*/() ", max_size=400))
def test_fuzz_arithmetic_alphabet(text):
    _check(text)


_expr = st.recursive(
    st.decimals(min_value=-10**6, max_value=10**6, allow_nan=False, allow_infinity=False, places=2).map(str),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from("+-*/"), inner).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
        inner.map(lambda e: f"({e})"), inner.map(lambda e: f"-{e}")),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_expr)
def test_fuzz_well_formed(text):
    _check(text)


def test_parser_executes_nothing(no_eval):
    import sys

    before = set(sys.modules)
    for text in ("__import__('os')", "__import__('antigravity')", "1+2", "(3*4)-5", "open('x')"):
        _check(text)
    assert evaluate("1+2") == 3
    assert set(sys.modules) == before  # nothing was imported


def test_number_formatting():
    assert format_number(Fraction(12)) == "12"
    assert format_number(Fraction(5, 2)) == "2.5"
    assert parse_number(" 1,204. ") == 1204
    assert parse_number("two") is None


def test_splits_are_disjoint_and_deterministic():
    task = get_env("calculator")
    train = task.problems("train", n=240)
    held = task.problems("heldout", n=240)
    assert train == task.problems("train", n=240)
    assert not {p.question for p in train} & {p.question for p in held}
    for fam in FAMILIES:  # templates differ, not only numbers
        assert not set(fam.train_phrasings) & set(fam.heldout_phrasings)
    assert {p.family for p in held} == {f.name for f in FAMILIES}
    assert {p.level for p in task.problems("heldout", n=30, levels=(2,))} == {2}


def test_demonstrations_are_correct():
    task = get_env("calculator")
    for problem in task.problems("heldout", n=36):
        env = CalculatorEnv(problem)
        env.reset()
        result = None
        for role, text in task.demonstration(problem):
            if role == "model":
                result = env.step(text)
                if not result.done:
                    assert result.observation is not None
        assert result.done and result.reward == 1.0 and result.info["correct"]


def test_rewards_and_turn_limit():
    problem = get_env("calculator").problems("train", n=1)[0]
    env = CalculatorEnv(problem, CalculatorConfig(max_tool_calls=1))
    env.reset()
    assert env.step("<calc>1+1</calc>").observation == "<result>2</result>"
    assert env.step("<calc>__import__('os')</calc>").done  # over the turn limit
    env = CalculatorEnv(problem)
    assert env.step("<calc>1/0</calc>").observation.startswith("<result>error")
    assert env.step(f"<answer>{problem.answer}.0</answer>").reward == 1.0
    assert CalculatorEnv(problem).step("<answer>-1</answer>").reward == 0.0
    assert CalculatorEnv(problem).step("no tags at all").reward == 0.0
    shaped = CalculatorEnv(problem, CalculatorConfig(format_reward=0.1))
    assert shaped.step("<answer>-1</answer>").reward == pytest.approx(0.1)
    assert CalculatorEnv(problem, CalculatorConfig(format_reward=0.1)).step(
        f"<answer>{problem.answer}</answer>").reward == pytest.approx(1.1)
