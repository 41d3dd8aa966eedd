"""Pod requests as Kubernetes aggregates them: containers, init containers, sidecars, overhead."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.framework.kubeobjects import container, make_pod

from secondary_scheduler.framework import podrequests
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podrequests import non_zero_requests, pod_requests, requests_and_non_zero

MI = 1024 * 1024


def spec(**fields: object) -> dict[str, object]:
    return dict(fields)


def test_regular_containers_add_up() -> None:
    requests = pod_requests(
        spec(
            containers=[
                container(requests={"cpu": "500m", "memory": "1Gi"}),
                container(requests={"cpu": "1"}),
            ]
        )
    )
    assert requests == {"cpu": 1500, "memory": 1024 * MI}


def test_an_init_container_counts_as_a_maximum() -> None:
    requests = pod_requests(
        spec(
            initContainers=[container(requests={"cpu": "2", "memory": "100Mi"})],
            containers=[container(requests={"cpu": "1", "memory": "1Gi"})],
        )
    )
    assert requests == {"cpu": 2000, "memory": 1024 * MI}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    # The sidecar keeps running: 1 (sidecar) + 1 (app) = 2 cpu at steady state, but the
    # init container started after the sidecar runs next to it: 1.5 + 1 = 2.5 cpu.
    requests = pod_requests(
        spec(
            initContainers=[
                container("sidecar", requests={"cpu": "1"}, restart_policy="Always"),
                container("migrate", requests={"cpu": "1500m"}),
            ],
            containers=[container(requests={"cpu": "1"})],
        )
    )
    assert requests == {"cpu": 2500}


def test_an_init_container_before_the_sidecar_does_not_run_with_it() -> None:
    requests = pod_requests(
        spec(
            initContainers=[
                container("migrate", requests={"cpu": "1500m"}),
                container("sidecar", requests={"cpu": "1"}, restart_policy="Always"),
            ],
            containers=[container(requests={"cpu": "1"})],
        )
    )
    assert requests == {"cpu": 2000}


def test_overhead_is_added() -> None:
    requests = pod_requests(
        spec(
            containers=[container(requests={"cpu": "1", "memory": "1Gi"})],
            overhead={"cpu": "250m", "memory": "120Mi"},
        )
    )
    assert requests == {"cpu": 1250, "memory": 1144 * MI}


def test_pod_level_requests_replace_the_container_sum() -> None:
    requests = pod_requests(
        spec(
            containers=[container(requests={"cpu": "1", "memory": "1Gi"})],
            resources={"requests": {"cpu": "3"}},
        )
    )
    assert requests == {"cpu": 3000, "memory": 1024 * MI}


def test_pod_level_hugepages_replace_the_container_sum() -> None:
    requests = pod_requests(
        spec(
            containers=[container(requests={"cpu": "1", "hugepages-2Mi": "64Mi"})],
            resources={"requests": {"cpu": "2", "hugepages-2Mi": "256Mi"}},
        )
    )
    assert requests == {"cpu": 2000, "hugepages-2Mi": 256 * MI}


def test_unsupported_pod_level_resources_alone_leave_the_container_sum() -> None:
    requests = pod_requests(
        spec(
            containers=[container(requests={"cpu": "1", "example.com/gpu": "1"})],
            resources={"requests": {"example.com/gpu": "4"}},
        )
    )
    assert requests == {"cpu": 1000, "example.com/gpu": 1}


def test_quantities_are_summed_exactly_before_rounding_up() -> None:
    requests = pod_requests(
        spec(containers=[container(requests={"cpu": "0.5m"}), container(requests={"cpu": "0.5m"})])
    )
    assert requests == {"cpu": 1}


def test_non_zero_requests_default_each_container_missing_cpu_or_memory() -> None:
    assert non_zero_requests(spec(containers=[container()])) == (100, 200 * MI)
    two = spec(containers=[container(requests={"cpu": "1"}), container(requests={"memory": "1Gi"})])
    assert non_zero_requests(two) == (1100, 1224 * MI)


def test_an_explicit_zero_request_is_not_defaulted() -> None:
    assert non_zero_requests(spec(containers=[container(requests={"cpu": "0", "memory": "0"})])) == (0, 0)


def test_non_zero_requests_keep_pod_level_values() -> None:
    pod_level = spec(containers=[container()], resources={"requests": {"cpu": "2"}})
    assert non_zero_requests(pod_level) == (2000, 200 * MI)


def test_pod_info_parses_the_pod_once() -> None:
    pod = make_pod(
        "web",
        namespace="shop",
        requests={"cpu": "250m"},
        labels={"app": "web"},
        priority=1000,
        schedulerName="secondary",
        tolerations=[{"key": "gpu", "operator": "Exists"}],
        nodeSelector={"disk": "ssd"},
        schedulingGates=[{"name": "wait"}],
        containers=[container(requests={"cpu": "250m"}, ports=[{"containerPort": 80, "hostPort": 8080}])],
    )
    info = PodInfo.from_pod(pod)
    assert (info.key, info.priority, info.scheduler_name) == ("shop/web", 1000, "secondary")
    assert info.requests == {"cpu": 250}
    assert (info.non_zero_cpu, info.non_zero_memory) == (250, 200 * MI)
    assert [(port.ip, port.protocol, port.port) for port in info.host_ports] == [("0.0.0.0", "TCP", 8080)]
    assert info.scheduling_gates == ("wait",)
    assert not info.required_node_affinity.is_empty
    assert info.tolerations[0].operator == "Exists"


def _every_way(spec: dict[str, Any], status: dict[str, Any], pod_level: bool) -> tuple[int, int]:
    """``non_zero_requests`` the long way, as it was before the shortcut: the containers summed
    again with the defaults, whether or not a container leaves one unset."""
    statuses = podrequests._Statuses(status)
    summed = podrequests._requests(spec, {}, statuses, pod_level)
    defaults = podrequests._DEFAULTS
    if pod_level and podrequests._pod_level_set(spec):
        defaults = {name: value for name, value in defaults.items() if name not in summed}
    if defaults:
        summed = podrequests._requests(spec, defaults, statuses, pod_level)
    return podrequests._to_units("cpu", summed.get("cpu", Decimal(0))), podrequests._to_units(
        "memory", summed.get("memory", Decimal(0))
    )


_asks = st.dictionaries(
    st.sampled_from(["cpu", "memory", "example.com/gpu"]), st.sampled_from(["0", "1", "250m", "1Gi"])
)


@st.composite
def _pods(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A spec and status: containers, init containers (sidecars too), pod-level requests,
    overhead, container statuses with resources, and a resize found infeasible."""
    count = draw(st.integers(0, 3))
    containers = [container(name=f"c{i}", requests=draw(st.none() | _asks)) for i in range(count)]
    inits = []
    for i in range(draw(st.integers(0, 2))):
        init = container(name=f"i{i}", requests=draw(st.none() | _asks))
        if draw(st.booleans()):
            init["restartPolicy"] = "Always"
        inits.append(init)
    spec: dict[str, Any] = {"containers": containers, "initContainers": inits}
    if draw(st.booleans()):
        spec["resources"] = {draw(st.sampled_from(["requests", "limits"])): draw(_asks)}
    if draw(st.booleans()):
        spec["overhead"] = draw(_asks)
    named = [item["name"] for item in containers + inits]
    statuses = [
        {"name": name, "resources": {"requests": draw(_asks)}, "allocatedResources": draw(_asks)}
        for name in named
        if draw(st.booleans())
    ]
    status: dict[str, Any] = {"containerStatuses": statuses}
    if draw(st.booleans()):
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    return spec, status


@settings(max_examples=400, deadline=None)
@given(_pods(), st.booleans())
def test_summing_once_gives_what_summing_with_the_defaults_gives(
    pod: tuple[dict[str, Any], dict[str, Any]], pod_level: bool
) -> None:
    spec, status = pod
    assert non_zero_requests(spec, status, pod_level=pod_level) == _every_way(spec, status, pod_level)
    assert requests_and_non_zero(spec, status) == (pod_requests(spec, status), _every_way(spec, status, True))
