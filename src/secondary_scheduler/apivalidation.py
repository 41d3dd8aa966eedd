"""The API server's checks on the objects we read from files, before anything acts on them.

`secsched score` takes pods and nodes from files, and `secsched operator render` takes a CR
whose fields end up in a Deployment. The API server would refuse a pod whose node-affinity
operator is `Inn`, a toleration operator `Exist`, a label value of 70 characters or a quantity
of `.inf`; scoring such a pod anyway explains it with confident, wrong reasons. So the same
rules (apimachinery's label and name syntax, resource.Quantity, core/v1 pod and node
validation, for the fields the scheduler reads) run here, and each problem is
`(field, what is wrong, how to fix it)`.

Fields the scheduler never reads (images, commands, probes) are not checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from secondary_scheduler.kube.quantity import parse_quantity, quantity_parts

Problem = tuple[str, str, str]
"""(field path, what is wrong, how to fix it)."""

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_MAX_QUANTITY = Decimal(INT64_MAX) / 1000
"""Kubernetes keeps milli-values in an int64: larger quantities are not usable for scheduling."""

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_FIX = (
    "at most 63 characters: letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
)

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PROTOCOLS = ("TCP", "UDP", "SCTP")


# -- syntax -----------------------------------------------------------------------------


def qualified_name_problem(key: Any) -> str | None:
    """Why `key` is not a label key / qualified name (`[prefix/]name`), or None."""
    if key is None:
        return "missing"
    if not isinstance(key, str):
        return f"{_show(key)} is not a string"
    if not key:
        return "must not be empty"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"{key!r}: the prefix before '/' must not be empty"
        if not is_dns_subdomain(prefix):
            return f"{key!r}: the prefix {prefix!r} must be a DNS subdomain (lower-case, e.g. example.com)"
    if len(name) > 63:
        return f"{key!r}: the name part must be at most 63 characters"
    if not _NAME_PART.match(name):
        return (
            f"{key!r} is not a valid name: letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{_show(value)} is not a string: quote it"
    if value == "":
        return None
    if len(value) > 63 or not _NAME_PART.match(value):
        return f"{value!r} is not a valid label value"
    return None


def is_dns_subdomain(value: str) -> bool:
    """Whether ``value`` is an RFC 1123 subdomain (apimachinery's IsDNS1123Subdomain): what most
    object names and a label key's prefix must be."""
    return len(value) <= 253 and _DNS_SUBDOMAIN.match(value) is not None


def dns_subdomain_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{_show(value)} is not a string"
    if not value:
        return "must not be empty"
    if not is_dns_subdomain(value):
        return (
            f"{value!r} is not a valid name: lower-case letters, digits, '-' and '.', at most 253 characters"
        )
    return None


def dns_label_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{_show(value)} is not a string"
    if not value:
        return "must not be empty"
    if len(value) > 63 or not _DNS_LABEL.match(value):
        return f"{value!r} is not a valid name: lower-case letters, digits and '-', at most 63 characters"
    return None


def quantity_problem(value: Any, *, non_negative: bool = True) -> str | None:
    """Why `value` is not a usable resource.Quantity, or None (strings as the API writes them, or numbers)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"{_show(value)} is not a quantity (examples: '500m', '2', '1Gi')"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a quantity: write a finite number"
    text = value if isinstance(value, str) else repr(value)
    try:
        parts = quantity_parts(text.strip() if isinstance(value, str) else text)
    except ValueError:  # an exponent of more digits than int() takes
        return f"{value!r} is not a number"
    if parts is None or (isinstance(value, str) and value != value.strip()):
        return f"{value!r} is not a Kubernetes quantity (examples: '500m', '2', '1Gi', '512Mi', '1e3')"
    number, radix, exponent = parts
    try:
        base = Decimal(number)
        if radix == 2:
            exponent_ok = True
            amount = base * (Decimal(2) ** exponent)
        else:
            exponent_ok = -30 <= exponent <= 30
            amount = base.scaleb(exponent) if exponent_ok else base
    except (InvalidOperation, ValueError):
        return f"{value!r} is not a number"
    if not exponent_ok or abs(amount) > _MAX_QUANTITY:
        return f"{value!r} is too large: Kubernetes quantities stay below about 9.2e15"
    if non_negative and amount < 0:
        return f"{value!r} is negative: resources cannot be"
    return None


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return repr(value)
    return str(value)


# -- helpers ----------------------------------------------------------------------------


def _mapping(value: Any, at: str, what: str, problems: list[Problem]) -> Mapping[str, Any]:
    """`value` if it is a mapping (None: empty), else a problem and an empty mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.append((at, f"expected {what}, got {_show(value)}", f"write {what}"))
        return {}
    return value


def _list(value: Any, at: str, what: str, problems: list[Problem]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(
            (at, f"expected a list of {what}, got {_show(value)}", f"write a YAML list of {what}")
        )
        return []
    return value


def _string(value: Any, at: str, problems: list[Problem], *, required: bool = False) -> str:
    if value is None:
        if required:
            problems.append((at, "missing", "set it"))
        return ""
    if not isinstance(value, str):
        problems.append((at, f"expected a string, got {_show(value)}", f'quote it, e.g. "{_show(value)}"'))
        return ""
    if required and not value:
        problems.append((at, "must not be empty", "set it"))
    return value


def _integer(value: Any, at: str, problems: list[Problem], low: int, high: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(
            (at, f"expected an integer, got {_show(value)}", f"write a whole number from {low} to {high}")
        )
        return None
    if not low <= value <= high:
        problems.append((at, f"{value} is out of range", f"use a whole number from {low} to {high}"))
        return None
    return value


def _one_of(
    value: Any, at: str, allowed: tuple[str, ...], problems: list[Problem], *, empty_ok: bool = False
) -> str:
    if value is None or (empty_ok and value == ""):
        return ""
    if value not in allowed:
        close = [option for option in allowed if isinstance(value, str) and option.lower() == value.lower()]
        hint = f"did you mean {close[0]}?" if close else f"use one of {', '.join(allowed)}"
        problems.append((at, f"{_show(value)} is not a valid value", hint))
        return ""
    return str(value)


def check_labels(value: Any, at: str, problems: list[Problem], what: str = "labels") -> None:
    labels = _mapping(value, at, f"a mapping of {what} (key: value)", problems)
    for key, label in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append(
                (f"{at}.{key}", f"the key {problem}", "label keys are [prefix/]name, e.g. example.com/tier")
            )
            continue
        problem = label_value_problem(label)
        if problem:
            problems.append((f"{at}.{key}", problem, f"a label value is {_LABEL_FIX}"))


def check_annotations(value: Any, at: str, problems: list[Problem]) -> None:
    annotations = _mapping(value, at, "a mapping of annotations (key: value)", problems)
    for key, text in annotations.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append((f"{at}.{key}", f"the key {problem}", "annotation keys are [prefix/]name"))
        elif not isinstance(text, str):
            problems.append((f"{at}.{key}", f"expected a string, got {_show(text)}", "quote the value"))


def check_metadata(obj: Mapping[str, Any], at: str, problems: list[Problem], *, namespaced: bool) -> None:
    prefix = f"{at}." if at else ""
    metadata = _mapping(
        obj.get("metadata"), f"{prefix}metadata", "a mapping (name, namespace, labels)", problems
    )
    name = metadata.get("name")
    problem = dns_subdomain_problem(name) if name is not None else "missing: every object needs a name"
    if problem:
        problems.append((f"{prefix}metadata.name", problem, "give the object's name"))
    namespace = metadata.get("namespace")
    if namespaced and namespace not in (None, ""):
        problem = dns_label_problem(namespace)
        if problem:
            problems.append((f"{prefix}metadata.namespace", problem, "give a namespace name"))
    check_labels(metadata.get("labels"), f"{prefix}metadata.labels", problems)
    check_annotations(metadata.get("annotations"), f"{prefix}metadata.annotations", problems)


def check_resources(value: Any, at: str, problems: list[Problem]) -> dict[str, Decimal]:
    """A resource list (requests, limits, capacity): resource name -> quantity."""
    resources = _mapping(value, at, "a mapping of resource name to quantity (cpu: 500m)", problems)
    amounts: dict[str, Decimal] = {}
    for name, quantity in resources.items():
        problem = qualified_name_problem(name)
        if problem:
            problems.append(
                (f"{at}.{name}", f"the resource name {problem}", "e.g. cpu, memory, example.com/gpu")
            )
            continue
        problem = quantity_problem(quantity)
        if problem:
            problems.append((f"{at}.{name}", problem, "write a quantity such as 500m, 2 or 1Gi"))
            continue
        amounts[name] = parse_quantity(quantity)
    return amounts


# -- selectors, affinity, tolerations, spreading ---------------------------------------------


def check_label_selector(value: Any, at: str, problems: list[Problem]) -> None:
    """metav1.LabelSelector: matchLabels, and matchExpressions with In/NotIn/Exists/DoesNotExist."""
    selector = _mapping(value, at, "a label selector (matchLabels, matchExpressions)", problems)
    _unknown(selector, at, ("matchLabels", "matchExpressions"), problems)
    check_labels(selector.get("matchLabels"), f"{at}.matchLabels", problems)
    for index, expression in enumerate(
        _list(selector.get("matchExpressions"), f"{at}.matchExpressions", "requirements", problems)
    ):
        where = f"{at}.matchExpressions[{index}]"
        requirement = _mapping(expression, where, "a requirement (key, operator, values)", problems)
        key_problem = qualified_name_problem(requirement.get("key"))
        if key_problem:
            problems.append((f"{where}.key", key_problem, "give a label key"))
        operator = _one_of(
            requirement.get("operator"), f"{where}.operator", LABEL_SELECTOR_OPERATORS, problems
        )
        values = _list(requirement.get("values"), f"{where}.values", "strings", problems)
        _check_values(values, operator, where, problems, label_values=True)


def _check_values(
    values: list[Any], operator: str, where: str, problems: list[Problem], *, label_values: bool
) -> None:
    for index, value in enumerate(values):
        problem = (
            label_value_problem(value)
            if label_values
            else (None if isinstance(value, str) else f"{_show(value)} is not a string")
        )
        if problem:
            problems.append((f"{where}.values[{index}]", problem, "quote each value"))
    if operator in ("In", "NotIn") and not values:
        problems.append(
            (f"{where}.values", f"must not be empty with operator {operator}", "list at least one value")
        )
    if operator in ("Exists", "DoesNotExist") and values:
        problems.append((f"{where}.values", f"must be empty with operator {operator}", "remove the values"))
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            problems.append(
                (
                    f"{where}.values",
                    f"needs exactly one value with operator {operator}",
                    "give one integer, quoted",
                )
            )
        elif isinstance(values[0], str) and not re.fullmatch(r"[+-]?\d+", values[0]):
            problems.append(
                (
                    f"{where}.values[0]",
                    f"{values[0]!r} is not an integer",
                    f"operator {operator} compares integers",
                )
            )


def check_node_selector_term(value: Any, at: str, problems: list[Problem]) -> None:
    term = _mapping(value, at, "a node selector term (matchExpressions, matchFields)", problems)
    _unknown(term, at, ("matchExpressions", "matchFields"), problems)
    for index, expression in enumerate(
        _list(term.get("matchExpressions"), f"{at}.matchExpressions", "requirements", problems)
    ):
        where = f"{at}.matchExpressions[{index}]"
        requirement = _mapping(expression, where, "a requirement (key, operator, values)", problems)
        key_problem = qualified_name_problem(requirement.get("key"))
        if key_problem:
            problems.append((f"{where}.key", key_problem, "give a node label key"))
        operator = _one_of(
            requirement.get("operator"), f"{where}.operator", NODE_SELECTOR_OPERATORS, problems
        )
        values = _list(requirement.get("values"), f"{where}.values", "strings", problems)
        _check_values(values, operator, where, problems, label_values=True)
    for index, expression in enumerate(
        _list(term.get("matchFields"), f"{at}.matchFields", "requirements", problems)
    ):
        where = f"{at}.matchFields[{index}]"
        requirement = _mapping(expression, where, "a requirement (key, operator, values)", problems)
        if requirement.get("key") != "metadata.name":
            problems.append(
                (
                    f"{where}.key",
                    f"{_show(requirement.get('key'))} is not supported",
                    "matchFields supports only metadata.name",
                )
            )
        operator = _one_of(requirement.get("operator"), f"{where}.operator", ("In", "NotIn"), problems)
        values = _list(requirement.get("values"), f"{where}.values", "strings", problems)
        if operator and len(values) != 1:
            problems.append((f"{where}.values", "needs exactly one node name", "give one value"))


def check_affinity(value: Any, at: str, problems: list[Problem]) -> None:
    affinity = _mapping(value, at, "a mapping (nodeAffinity, podAffinity, podAntiAffinity)", problems)
    _unknown(affinity, at, ("nodeAffinity", "podAffinity", "podAntiAffinity"), problems)
    node = _mapping(affinity.get("nodeAffinity"), f"{at}.nodeAffinity", "a mapping", problems)
    required_at = f"{at}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = _mapping(
        node.get("requiredDuringSchedulingIgnoredDuringExecution"), required_at, "a node selector", problems
    )
    if "requiredDuringSchedulingIgnoredDuringExecution" in node:
        terms = _list(
            required.get("nodeSelectorTerms"), f"{required_at}.nodeSelectorTerms", "terms", problems
        )
        if not terms:
            problems.append(
                (
                    f"{required_at}.nodeSelectorTerms",
                    "must have at least one term",
                    "add a term or remove the requirement",
                )
            )
        for index, term in enumerate(terms):
            check_node_selector_term(term, f"{required_at}.nodeSelectorTerms[{index}]", problems)
    preferred_at = f"{at}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for index, item in enumerate(
        _list(
            node.get("preferredDuringSchedulingIgnoredDuringExecution"),
            preferred_at,
            "weighted terms",
            problems,
        )
    ):
        where = f"{preferred_at}[{index}]"
        preference = _mapping(item, where, "a weighted term (weight, preference)", problems)
        _weight(preference.get("weight"), f"{where}.weight", problems)
        check_node_selector_term(preference.get("preference"), f"{where}.preference", problems)
    for kind in ("podAffinity", "podAntiAffinity"):
        pod = _mapping(affinity.get(kind), f"{at}.{kind}", "a mapping", problems)
        required_at = f"{at}.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
        for index, term in enumerate(
            _list(
                pod.get("requiredDuringSchedulingIgnoredDuringExecution"),
                required_at,
                "pod affinity terms",
                problems,
            )
        ):
            _pod_affinity_term(term, f"{required_at}[{index}]", problems)
        preferred_at = f"{at}.{kind}.preferredDuringSchedulingIgnoredDuringExecution"
        for index, item in enumerate(
            _list(
                pod.get("preferredDuringSchedulingIgnoredDuringExecution"),
                preferred_at,
                "weighted terms",
                problems,
            )
        ):
            where = f"{preferred_at}[{index}]"
            weighted = _mapping(item, where, "a weighted term (weight, podAffinityTerm)", problems)
            _weight(weighted.get("weight"), f"{where}.weight", problems)
            _pod_affinity_term(weighted.get("podAffinityTerm"), f"{where}.podAffinityTerm", problems)


def _weight(value: Any, at: str, problems: list[Problem]) -> None:
    if value is None:
        problems.append((at, "missing", "give a weight from 1 to 100"))
    else:
        _integer(value, at, problems, 1, 100)


def _pod_affinity_term(value: Any, at: str, problems: list[Problem]) -> None:
    term = _mapping(value, at, "a pod affinity term (labelSelector, topologyKey)", problems)
    key_problem = qualified_name_problem(term.get("topologyKey"))
    if key_problem:
        problems.append(
            (f"{at}.topologyKey", key_problem, "give a node label key, e.g. kubernetes.io/hostname")
        )
    if term.get("labelSelector") is not None:
        check_label_selector(term.get("labelSelector"), f"{at}.labelSelector", problems)
    if term.get("namespaceSelector") is not None:
        check_label_selector(term.get("namespaceSelector"), f"{at}.namespaceSelector", problems)
    for index, namespace in enumerate(
        _list(term.get("namespaces"), f"{at}.namespaces", "namespace names", problems)
    ):
        problem = dns_label_problem(namespace)
        if problem:
            problems.append((f"{at}.namespaces[{index}]", problem, "give namespace names"))
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        for index, key in enumerate(_list(term.get(field), f"{at}.{field}", "label keys", problems)):
            problem = qualified_name_problem(key)
            if problem:
                problems.append((f"{at}.{field}[{index}]", problem, "give label keys"))


def check_tolerations(value: Any, at: str, problems: list[Problem]) -> None:
    for index, item in enumerate(_list(value, at, "tolerations", problems)):
        where = f"{at}[{index}]"
        toleration = _mapping(item, where, "a toleration (key, operator, value, effect)", problems)
        key = _string(toleration.get("key"), f"{where}.key", problems)
        if key:
            problem = qualified_name_problem(key)
            if problem:
                problems.append((f"{where}.key", problem, "give a taint key"))
        operator = (
            _one_of(
                toleration.get("operator"), f"{where}.operator", TOLERATION_OPERATORS, problems, empty_ok=True
            )
            or "Equal"
        )
        text = _string(toleration.get("value"), f"{where}.value", problems)
        if operator == "Exists" and text:
            problems.append(
                (
                    f"{where}.value",
                    "must be empty when operator is Exists",
                    "remove the value, or use operator Equal",
                )
            )
        if operator == "Equal" and text:
            problem = label_value_problem(text)
            if problem:
                problems.append((f"{where}.value", problem, f"a taint value is {_LABEL_FIX}"))
        if not key and operator != "Exists":
            problems.append(
                (
                    f"{where}.operator",
                    "must be Exists when the key is empty (matching every taint)",
                    "set operator: Exists, or give a key",
                )
            )
        effect = _one_of(toleration.get("effect"), f"{where}.effect", TAINT_EFFECTS, problems, empty_ok=True)
        seconds = _integer(
            toleration.get("tolerationSeconds"), f"{where}.tolerationSeconds", problems, -(2**63), INT64_MAX
        )
        if seconds is not None and effect != "NoExecute":
            problems.append(
                (
                    f"{where}.tolerationSeconds",
                    "only applies with effect NoExecute",
                    "set effect: NoExecute, or remove it",
                )
            )


def check_taints(value: Any, at: str, problems: list[Problem]) -> None:
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(_list(value, at, "taints", problems)):
        where = f"{at}[{index}]"
        taint = _mapping(item, where, "a taint (key, value, effect)", problems)
        key = taint.get("key")
        problem = qualified_name_problem(key)
        if problem:
            problems.append((f"{where}.key", problem, "give the taint's key"))
        value_problem = label_value_problem(taint.get("value", ""))
        if value_problem:
            problems.append((f"{where}.value", value_problem, f"a taint value is {_LABEL_FIX}"))
        if taint.get("effect") is None:
            problems.append((f"{where}.effect", "missing", f"use one of {', '.join(TAINT_EFFECTS)}"))
        effect = _one_of(taint.get("effect"), f"{where}.effect", TAINT_EFFECTS, problems)
        if isinstance(key, str) and effect:
            if (key, effect) in seen:
                problems.append((where, f"taint {key}:{effect} is listed twice", "keep one"))
            seen.add((key, effect))


def check_topology_spread(value: Any, at: str, problems: list[Problem]) -> None:
    seen: set[tuple[Any, Any]] = set()
    for index, item in enumerate(_list(value, at, "constraints", problems)):
        where = f"{at}[{index}]"
        constraint = _mapping(item, where, "a constraint (maxSkew, topologyKey, whenUnsatisfiable)", problems)
        if constraint.get("maxSkew") is None:
            problems.append((f"{where}.maxSkew", "missing", "give a maxSkew of 1 or more"))
        else:
            _integer(constraint.get("maxSkew"), f"{where}.maxSkew", problems, 1, INT32_MAX)
        key_problem = qualified_name_problem(constraint.get("topologyKey"))
        if key_problem:
            problems.append(
                (
                    f"{where}.topologyKey",
                    key_problem,
                    "give a node label key, e.g. topology.kubernetes.io/zone",
                )
            )
        when = _one_of(
            constraint.get("whenUnsatisfiable"),
            f"{where}.whenUnsatisfiable",
            ("DoNotSchedule", "ScheduleAnyway"),
            problems,
        )
        if constraint.get("whenUnsatisfiable") is None:
            problems.append((f"{where}.whenUnsatisfiable", "missing", "use DoNotSchedule or ScheduleAnyway"))
        minimum = _integer(constraint.get("minDomains"), f"{where}.minDomains", problems, 1, INT32_MAX)
        if minimum is not None and when == "ScheduleAnyway":
            problems.append(
                (
                    f"{where}.minDomains",
                    "only applies with whenUnsatisfiable DoNotSchedule",
                    "remove it or use DoNotSchedule",
                )
            )
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            _one_of(constraint.get(policy), f"{where}.{policy}", ("Honor", "Ignore"), problems)
        if constraint.get("labelSelector") is not None:
            check_label_selector(constraint.get("labelSelector"), f"{where}.labelSelector", problems)
        for key_index, key in enumerate(
            _list(constraint.get("matchLabelKeys"), f"{where}.matchLabelKeys", "label keys", problems)
        ):
            problem = qualified_name_problem(key)
            if problem:
                problems.append((f"{where}.matchLabelKeys[{key_index}]", problem, "give label keys"))
        pair = (constraint.get("topologyKey"), constraint.get("whenUnsatisfiable"))
        if all(isinstance(part, str) for part in pair):
            if pair in seen:
                problems.append(
                    (
                        where,
                        f"a second constraint on {pair[0]} with {pair[1]}",
                        "keep one per topologyKey and whenUnsatisfiable",
                    )
                )
            seen.add(pair)


def _unknown(obj: Mapping[str, Any], at: str, known: tuple[str, ...], problems: list[Problem]) -> None:
    for key in obj:
        if key not in known:
            problems.append((f"{at}.{key}", "unknown field", f"fields here: {', '.join(known)}"))


# -- objects ----------------------------------------------------------------------------


def check_pod(pod: Any, at: str = "") -> list[Problem]:
    """The API server's complaints about a v1 Pod, for the fields the scheduler reads."""
    problems: list[Problem] = []
    prefix = f"{at}." if at else ""
    if not isinstance(pod, Mapping):
        return [
            (at or "(document)", f"expected a v1 Pod (a mapping), got {_show(pod)}", "give a Pod manifest")
        ]
    check_metadata(pod, at, problems, namespaced=True)
    spec = _mapping(pod.get("spec"), f"{prefix}spec", "a mapping (containers, ...)", problems)
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(
            (
                f"{prefix}spec.containers",
                "missing or empty: a Pod needs spec.containers (a list)",
                "list the pod's containers",
            )
        )
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        for index, item in enumerate(_list(spec.get(field), f"{prefix}spec.{field}", "containers", problems)):
            where = f"{prefix}spec.{field}[{index}]"
            container = _mapping(item, where, "a container (name, resources, ports)", problems)
            name = container.get("name")
            problem = dns_label_problem(name) if name is not None else "missing"
            if problem:
                problems.append((f"{where}.name", problem, "give the container a name"))
            elif name in names:
                problems.append(
                    (
                        f"{where}.name",
                        f"{name!r} is used by another container",
                        "give each container its own name",
                    )
                )
            else:
                names.add(str(name))
            _container_resources(container.get("resources"), f"{where}.resources", problems)
            for port_index, item_port in enumerate(
                _list(container.get("ports"), f"{where}.ports", "ports", problems)
            ):
                port_at = f"{where}.ports[{port_index}]"
                port = _mapping(item_port, port_at, "a port (containerPort, hostPort, protocol)", problems)
                if port.get("containerPort") is None:
                    problems.append((f"{port_at}.containerPort", "missing", "give a port from 1 to 65535"))
                _integer(port.get("containerPort"), f"{port_at}.containerPort", problems, 1, 65535)
                _integer(port.get("hostPort"), f"{port_at}.hostPort", problems, 0, 65535)
                _one_of(port.get("protocol"), f"{port_at}.protocol", PROTOCOLS, problems)
                host_ip = port.get("hostIP")
                if host_ip is not None and not isinstance(host_ip, str):
                    problems.append(
                        (
                            f"{port_at}.hostIP",
                            f"expected an IP address string, got {_show(host_ip)}",
                            "quote it",
                        )
                    )
    check_resources(spec.get("overhead"), f"{prefix}spec.overhead", problems)
    selector = _mapping(
        spec.get("nodeSelector"),
        f"{prefix}spec.nodeSelector",
        "a mapping of node label to value (disktype: ssd)",
        problems,
    )
    if selector:
        check_labels(selector, f"{prefix}spec.nodeSelector", problems, "node labels")
    if spec.get("affinity") is not None:
        check_affinity(spec.get("affinity"), f"{prefix}spec.affinity", problems)
    check_tolerations(spec.get("tolerations"), f"{prefix}spec.tolerations", problems)
    check_topology_spread(
        spec.get("topologySpreadConstraints"), f"{prefix}spec.topologySpreadConstraints", problems
    )
    for key in ("schedulerName", "nodeName", "priorityClassName"):
        value = spec.get(key)
        if value not in (None, ""):
            problem = dns_subdomain_problem(value)
            if problem:
                problems.append((f"{prefix}spec.{key}", problem, "give a valid name"))
    _integer(spec.get("priority"), f"{prefix}spec.priority", problems, -(2**31), INT32_MAX)
    _one_of(
        spec.get("preemptionPolicy"),
        f"{prefix}spec.preemptionPolicy",
        ("PreemptLowerPriority", "Never"),
        problems,
    )
    for index, gate in enumerate(
        _list(spec.get("schedulingGates"), f"{prefix}spec.schedulingGates", "gates", problems)
    ):
        gate_at = f"{prefix}spec.schedulingGates[{index}]"
        problem = qualified_name_problem(_mapping(gate, gate_at, "a gate (name)", problems).get("name"))
        if problem:
            problems.append((f"{gate_at}.name", problem, "give the gate's name"))
    for index, item in enumerate(_list(spec.get("volumes"), f"{prefix}spec.volumes", "volumes", problems)):
        volume_at = f"{prefix}spec.volumes[{index}]"
        volume = _mapping(item, volume_at, "a volume (name, source)", problems)
        problem = dns_label_problem(volume.get("name"))
        if problem:
            problems.append((f"{volume_at}.name", problem, "give the volume a name"))
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            claim_at = f"{volume_at}.persistentVolumeClaim"
            _string(
                _mapping(claim, claim_at, "a mapping (claimName)", problems).get("claimName"),
                f"{claim_at}.claimName",
                problems,
                required=True,
            )
    status = _mapping(pod.get("status"), f"{prefix}status", "a mapping", problems)
    _string(status.get("phase"), f"{prefix}status.phase", problems)
    return problems


def _container_resources(value: Any, at: str, problems: list[Problem]) -> None:
    resources = _mapping(value, at, "a mapping (requests, limits)", problems)
    requests = check_resources(resources.get("requests"), f"{at}.requests", problems)
    limits = check_resources(resources.get("limits"), f"{at}.limits", problems)
    for name, limit in limits.items():
        request = requests.get(name)
        if request is not None and request > limit:
            problems.append(
                (
                    f"{at}.requests.{name}",
                    f"{resources['requests'][name]} is more than the limit {resources['limits'][name]}",
                    "a request must not exceed its limit",
                )
            )


def check_node(node: Any, at: str = "") -> list[Problem]:
    """The API server's complaints about a v1 Node, for the fields the scheduler reads."""
    problems: list[Problem] = []
    prefix = f"{at}." if at else ""
    if not isinstance(node, Mapping):
        return [(at, f"expected a v1 Node (a mapping), got {_show(node)}", "give a Node manifest")]
    check_metadata(node, at, problems, namespaced=False)
    spec = _mapping(node.get("spec"), f"{prefix}spec", "a mapping (taints, unschedulable)", problems)
    check_taints(spec.get("taints"), f"{prefix}spec.taints", problems)
    unschedulable = spec.get("unschedulable")
    if unschedulable is not None and not isinstance(unschedulable, bool):
        problems.append(
            (
                f"{prefix}spec.unschedulable",
                f"expected true or false, got {_show(unschedulable)}",
                "write true or false",
            )
        )
    status = _mapping(node.get("status"), f"{prefix}status", "a mapping (capacity, allocatable)", problems)
    for part in ("capacity", "allocatable"):
        check_resources(status.get(part), f"{prefix}status.{part}", problems)
    for index, item in enumerate(_list(status.get("images"), f"{prefix}status.images", "images", problems)):
        image = _mapping(item, f"{prefix}status.images[{index}]", "an image (names, sizeBytes)", problems)
        _list(image.get("names"), f"{prefix}status.images[{index}].names", "names", problems)
        _integer(image.get("sizeBytes"), f"{prefix}status.images[{index}].sizeBytes", problems, 0, INT64_MAX)
    return problems


def check_object(obj: Any, at: str) -> list[Problem]:
    """Any other object (PV, PVC, StorageClass, PDB...): apiVersion, kind and metadata."""
    problems: list[Problem] = []
    if not isinstance(obj, Mapping):
        return [(at, f"expected a Kubernetes object (a mapping), got {_show(obj)}", "give a manifest")]
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj.get(key):
            problems.append(
                (
                    f"{at}.{key}",
                    "missing: every object needs apiVersion and kind",
                    "copy them from `kubectl get -o yaml`",
                )
            )
    check_metadata(obj, at, problems, namespaced=True)
    return problems
