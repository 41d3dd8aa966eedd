"""Device selectors: CEL expressions evaluated as Kubernetes' DRA environment evaluates them.

Upstream (``k8s.io/dynamic-resource-allocation/cel``) gives an expression one variable,
``device``, with ``driver`` (string), ``attributes`` and ``capacity`` (domain -> name -> value).
An attribute or capacity name without a domain is the driver's. Looking up a domain the
device lacks yields an empty map rather than an error (so ``device.attributes["x"].y`` fails
with "no such key" only for ``y``, and ``"x" in device.attributes`` is false). Attributes are
ints, bools, strings or versions (semver values); capacities are quantities. Kubernetes'
``quantity()`` and ``semver()`` libraries give those values their methods.

The evaluator is cel-python (``celpy``, pure Python, its interpreter); each result is cached
per device by the allocator's caller, so a device is judged once per selector, not per cycle. The
extension libraries ``cel_libraries`` implements (ext.Strings less ``format``/``strings.quote``,
Kubernetes' lists library, ext.Sets, regex ``find``/``findAll``) are registered beside quantity
and semver. What it lacks of Kubernetes' base environment (``limitation.REFUSED_LIBRARIES``)
fails the selector with a message that says so rather than deciding for it.

Upstream's runtime cost limit (``resourceapi.CELSelectorExpressionMaxCost``, 1,000,000 per
evaluation) is enforced with cel-go's runtime cost rules, since celpy tracks no cost: each
variable or field read, index and call costs 1, a list literal 10 and a map literal 30, ``&&``,
``||`` and ``?:`` nothing; string comparisons, ``startsWith``/``endsWith``, ``contains``,
``matches`` and concatenation cost by their operands' lengths, and ``in`` a list by its size,
as cel-go's ``CostTracker`` charges them; the extension libraries' calls cost what upstream's
library cost table says (``cel_libraries.library_cost``). Macros (``all``, ``exists``...) are charged their
predicate's cost plus 1 per element (cel-go expands them into comprehensions whose loop
bookkeeping costs a little more: ours is a close lower bound there, exact elsewhere). Past the
limit the selector fails with upstream's error, "operation cancelled: actual cost limit exceeded".
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secondary_scheduler.plugins.dynamicresources.cel_libraries import (
    LIBRARY_FUNCTIONS,
    NAMESPACES,
    TRAVERSAL_FACTOR,
    LibraryError,
    actual_size,
    library_cost,
    regex_cost,
)
from secondary_scheduler.plugins.dynamicresources.limitation import REFUSED_LIBRARIES


class SelectorError(Exception):
    """A selector that compiles or evaluates to an error: upstream fails the whole allocation."""


class UnsupportedSelector(SelectorError):
    """A selector that uses a part of Kubernetes' CEL environment this evaluator lacks."""


# -- Kubernetes' quantity library ------------------------------------------------------------


@functools.total_ordering
class Quantity:
    """An exact resource quantity (k8s.io/apiserver/pkg/cel/library/quantity.go)."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    @classmethod
    def parse(cls, text: str | int) -> Quantity:
        try:
            return cls(Fraction(parse_quantity(text)))
        except QuantityError as error:
            raise ValueError(f"quantities must match the regular expression: {error}") from error

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError("no such overload")
        return self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def _as_quantity(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity(Fraction(int(value)))
    raise TypeError("no such overload")


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    return Quantity.parse(str(text))


def _is_quantity(text: Any) -> ct.BoolType:
    try:
        _quantity(text)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _as_integer(q: Any) -> ct.IntType:
    value = _as_quantity(q).value
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return ct.IntType(value.numerator)


def _is_integer(q: Any) -> ct.BoolType:
    value = _as_quantity(q).value
    return ct.BoolType(value.denominator == 1 and _INT64_MIN <= value.numerator <= _INT64_MAX)


def _sign(q: Any) -> ct.IntType:
    value = _as_quantity(q).value
    return ct.IntType((value > 0) - (value < 0))


def _as_approximate_float(q: Any) -> ct.DoubleType:
    return ct.DoubleType(float(_as_quantity(q).value))


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        return Quantity(a.value + _as_quantity(b).value)
    return a + b


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        return Quantity(a.value - _as_quantity(b).value)
    raise TypeError("no such overload")


# -- Kubernetes' semver library --------------------------------------------------------------

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@dataclass(frozen=True)
class Semver:
    """A semantic version, compared as blang/semver (v4) compares them: build metadata ignored."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]
    text: str

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        candidate = _normalized(text) if normalize else text
        match = _SEMVER.match(candidate)
        if match is None:
            raise ValueError(f"No Major.Minor.Patch elements found in {text!r}" if "." not in text else text)
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre, candidate)

    def key(self) -> tuple[Any, ...]:
        # A release sorts after its pre-releases; numeric identifiers sort before alphanumeric ones.
        pre_key = tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre_key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        return self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


def _normalized(text: str) -> str:
    """Upstream's normalize: strip a leading "v", pad a missing minor/patch, drop leading zeros."""
    text = text.removeprefix("v")
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    parts = text[:cut].split(".")
    parts += ["0"] * (3 - len(parts))
    return ".".join(part.lstrip("0") or "0" for part in parts) + text[cut:]


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    return Semver.parse(str(text), bool(normalize))


def _is_semver(text: Any, normalize: Any = False) -> ct.BoolType:
    try:
        _semver(text, normalize)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return (a.key() > b.key()) - (a.key() < b.key())
    raise TypeError("no such overload")


def _compare_to(a: Any, b: Any) -> ct.IntType:
    return ct.IntType(_compare(a, b))


def _is_less_than(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(_compare(a, b) < 0)


def _is_greater_than(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(_compare(a, b) > 0)


def _semver_part(index: int) -> Callable[[Any], ct.IntType]:
    def part(version: Any) -> ct.IntType:
        if not isinstance(version, Semver):
            raise TypeError("no such overload")
        return ct.IntType((version.major, version.minor, version.patch)[index])

    return part


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "sign": _sign,
    "asApproximateFloat": _as_approximate_float,
    "add": _add,
    "sub": _sub,
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    "compareTo": _compare_to,
    "isLessThan": _is_less_than,
    "isGreaterThan": _is_greater_than,
}


# -- the device variable ------------------------------------------------------------------


class _DomainMap(ct.MapType):
    """Upstream's attributes/capacity map: a missing domain reads as an empty map (``in`` stays false)."""

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if isinstance(key, str):
            return ct.MapType()
        return super().__getitem__(key)


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(name: str, attribute: Mapping[str, Any]) -> Any:
    if "int" in attribute:
        return ct.IntType(int(attribute["int"]))
    if "bool" in attribute:
        return ct.BoolType(bool(attribute["bool"]))
    if "string" in attribute:
        return ct.StringType(str(attribute["string"]))
    if "version" in attribute:
        try:
            return Semver.parse(str(attribute["version"]))
        except ValueError as error:
            raise SelectorError(f"attribute {name}: parse semantic version: {error}") from error
    raise SelectorError(f"attribute {name}: unsupported attribute value")


def device_variable(driver: str, device: Mapping[str, Any]) -> ct.MapType:
    """The ``device`` variable for one ResourceSlice device (build once per device, reuse per selector)."""
    attributes: dict[str, ct.MapType] = {}
    for name, attribute in (device.get("attributes") or {}).items():
        domain, ident = _split_name(name, driver)
        attributes.setdefault(domain, ct.MapType())[ct.StringType(ident)] = _attribute_value(name, attribute)
    capacity: dict[str, ct.MapType] = {}
    for name, entry in (device.get("capacity") or {}).items():
        domain, ident = _split_name(name, driver)
        try:
            value = Quantity.parse((entry or {}).get("value", "0"))
        except ValueError as error:
            raise SelectorError(f"capacity {name}: {error}") from error
        # An opaque value: celpy's MapType is typed for its own value types only.
        capacity.setdefault(domain, ct.MapType())[ct.StringType(ident)] = value  # type: ignore[assignment]
    return ct.MapType(
        {
            ct.StringType("driver"): ct.StringType(driver),
            ct.StringType("attributes"): _DomainMap({ct.StringType(k): v for k, v in attributes.items()}),
            ct.StringType("capacity"): _DomainMap({ct.StringType(k): v for k, v in capacity.items()}),
        }
    )


# -- the runtime cost limit (cel-go's interpreter/runtimecost.go) ------------------------------

COST_LIMIT = 1_000_000
"""resourceapi.CELSelectorExpressionMaxCost: the scheduler's runtime limit per evaluation."""
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
_NODE_COSTS = {"member_dot": 1}
"""Steps celpy evaluates as tree nodes rather than calls: field reads."""
_PRIMARY_COSTS = {"ident": 1, "list_lit": 10, "map_lit": 30}
"""Steps celpy evaluates inside a ``primary`` node, by its one child: variable reads, literals."""
_FREE_CALLS = frozenset({"_&&_", "_||_", "_?_:_"})


class CostLimitExceeded(Exception):
    """Raised inside an evaluation once its cost passes the limit; it ends the evaluation."""


class _CostTracker:
    __slots__ = ("cost", "limit")

    def __init__(self, limit: int) -> None:
        self.cost = 0
        self.limit = limit

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise CostLimitExceeded(COST_LIMIT_EXCEEDED)


_TRACKER: contextvars.ContextVar[_CostTracker | None] = contextvars.ContextVar("cel_cost", default=None)


def _traversal(size: int) -> int:
    return math.ceil(size * TRAVERSAL_FACTOR)


_COMPARISONS = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})


def call_cost(name: str, args: tuple[Any, ...]) -> int:
    """What cel-go's CostTracker charges one call of ``name`` with these arguments."""
    if name in _FREE_CALLS:
        return 0
    if len(args) != 2:
        return 1
    first, second = actual_size(args[0]), actual_size(args[1])
    if name in _COMPARISONS:  # scalars have size 1: they cost 1
        return _traversal(min(first, second))
    if name == "_in_":
        return second if isinstance(args[1], list) else 1
    if not isinstance(args[0], str | bytes):
        return 1
    if name == "_+_":
        return _traversal(first + second)
    if name in ("startsWith", "endsWith"):
        return _traversal(first)
    if name == "contains":
        return _traversal(first) * _traversal(second)
    if name == "matches":
        return regex_cost(args[0], args[1])
    return 1


def _costed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        tracker = _TRACKER.get()
        if tracker is not None:
            tracker.charge(call_cost(name, args))
        return function(*args)

    def library_call(*args: Any) -> Any:  # charged after the call: some costs read the result (join)
        tracker = _TRACKER.get()
        result = function(*args)
        if tracker is not None:
            tracker.charge(library_cost(name, args, result))
        return result

    costed = library_call if name in LIBRARY_FUNCTIONS else call
    costed.__name__ = getattr(function, "__name__", name)
    return costed


class _CostedEvaluator(Evaluator):
    """celpy's interpreter, charging each evaluated step to the evaluation's cost tracker."""

    def _visit_tree(self, tree: lark.Tree) -> Any:
        if tree.data == "primary":
            child = tree.children[0]
            cost = _PRIMARY_COSTS.get(str(child.data)) if isinstance(child, lark.Tree) else None
        else:
            cost = _NODE_COSTS.get(str(tree.data))
        if cost:
            tracker = _TRACKER.get()
            if tracker is not None:
                tracker.charge(cost)
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _MacroStep(ast, activation=self.activation)

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        """Two calls celpy reads otherwise: ``ns.f(...)`` as a namespaced function (celpy would read
        ``ns`` as a variable), and ``list.min()`` as the lists library's (celpy's own ``min`` macro
        charges nothing and errs differently)."""
        member, method = tree.children[0], cast(lark.Token, tree.children[1])
        arity = len(tree.children[2].children) if len(tree.children) > 2 else 0
        if str(method) in _TWO_VARIABLE_MACROS and arity == 3:
            raise UnsupportedSelector(
                f"CEL runtime error: the two-variable comprehension {method}(k, v, ...) is not available: "
                f"{_UNSUPPORTED_HINT}"
            )
        namespace = _namespace(member)
        if namespace is None and str(method) != "min":
            return super().member_dot_arg(tree)
        if namespace is not None:
            try:
                self.activation.resolve_function(f"{namespace}.{method}")
            except KeyError:
                return CELEvalError(f"undeclared reference to '{namespace}.{method}'")
        arguments = self.visit(tree.children[2]) if len(tree.children) > 2 else []
        if isinstance(arguments, CELEvalError):
            return arguments
        if namespace is None:
            return self.method_eval(self.visit(member), method, arguments)
        return self.function_eval(lark.Token("IDENT", f"{namespace}.{method}"), arguments)


_TWO_VARIABLE_MACROS = frozenset({"all", "exists", "exists_one"})


def _namespace(member: Any) -> str | None:
    """The namespace a ``member`` subtree names (``sets`` in ``sets.contains(...)``), else None."""
    if isinstance(member, lark.Tree) and member.data == "member" and len(member.children) == 1:
        member = member.children[0]
    if not (isinstance(member, lark.Tree) and member.data == "primary"):
        return None
    ident = member.children[0]
    if isinstance(ident, lark.Tree) and ident.data == "ident" and str(ident.children[0]) in NAMESPACES:
        return str(ident.children[0])
    return None


class _MacroStep(_CostedEvaluator):
    """A macro's predicate, evaluated once per element: each pass is a loop step (cost 1)."""

    def evaluate(self, context: Any = None) -> Any:
        tracker = _TRACKER.get()
        if tracker is not None:
            tracker.charge(1)
        return super().evaluate(context)


class _CostedRunner(celpy.InterpretedRunner):
    """The interpreted runner, each evaluation with a tracker of its own."""

    def evaluate(self, context: Any) -> ct.Value:
        token = _TRACKER.set(_CostTracker(COST_LIMIT))
        try:
            activation: Activation = self.new_activation()
            return _CostedEvaluator(ast=self.ast, activation=activation).evaluate(context)
        finally:
            _TRACKER.reset(token)


# -- compiling and evaluating ---------------------------------------------------------------

_ENVIRONMENT = celpy.Environment(runner_class=_CostedRunner)
# The interpreted runner: celpy's compiled runner names extension functions by module path in
# the code it generates (which fails for ours) and shares one global activation between calls.
_ALL_FUNCTIONS = {**base_functions, **_FUNCTIONS, **LIBRARY_FUNCTIONS}
_COSTED_FUNCTIONS = {name: _costed(name, function) for name, function in _ALL_FUNCTIONS.items()}

_UNSUPPORTED_HINT = (
    "this scheduler's CEL evaluator implements standard CEL with Kubernetes' quantity, semver, lists "
    "and regex libraries and cel-go's strings and sets extensions, but not "
    f"{REFUSED_LIBRARIES}: schedule this pod with the cluster's default scheduler"
)


class Selector:
    """One compiled selector expression."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        try:
            program = _ENVIRONMENT.compile(expression)
            self._program = _ENVIRONMENT.program(program, functions=_COSTED_FUNCTIONS)
        except Exception as error:  # celpy raises its parser's errors as they are
            raise SelectorError(f"CEL compile error: compilation failed: {error}") from error

    def matches(self, device: ct.MapType) -> bool:
        """Whether the device satisfies the selector; SelectorError when it evaluates to an error."""
        try:
            result = self._program.evaluate({"device": device})
        except CELEvalError as error:
            raise _runtime_error(error) from error
        except CostLimitExceeded as error:
            raise SelectorError(f"CEL runtime error: {error}") from error
        except UnsupportedSelector:
            raise
        except Exception as error:  # celpy surfaces some evaluation failures as Python exceptions
            raise SelectorError(f"CEL runtime error: {error}") from error
        if isinstance(result, CELEvalError):
            raise _runtime_error(result)
        if not isinstance(result, ct.BoolType | bool):
            raise SelectorError(
                f"CEL runtime error: CEL result of type {type(result).__name__} "
                "could not be converted to bool"
            )
        return bool(result)


_UNDECLARED = re.compile(r"undeclared reference to ['\"]?([\w.]+)")


def _runtime_error(error: CELEvalError) -> SelectorError:
    text = str(error.args[0]) if error.args else str(error)
    undeclared = _UNDECLARED.match(text)
    if undeclared is not None:
        return UnsupportedSelector(
            f"CEL runtime error: function or variable {undeclared.group(1)!r} is not available: "
            f"{_UNSUPPORTED_HINT}"
        )
    text = text.replace("no such member in mapping", "no such key")
    if len(error.args) > 2 and error.args[1] is LibraryError and error.args[2]:
        return SelectorError(f"CEL runtime error: {error.args[2][0]}")
    if text in ("return error for overflow", "no such overload") and len(error.args) > 2 and error.args[2]:
        text = f"{text}: {error.args[2][0]}"
    return SelectorError(f"CEL runtime error: {text}")


@functools.lru_cache(maxsize=1024)
def compiled(expression: str) -> Selector | SelectorError:
    """The expression compiled once (upstream keeps a cache too); an error is cached as well."""
    try:
        return Selector(expression)
    except SelectorError as error:
        return error
