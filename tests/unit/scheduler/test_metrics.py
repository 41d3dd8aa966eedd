"""The scheduler's metrics under kube-scheduler's and client-go's names."""

from __future__ import annotations

from secondary_scheduler.kube.client import TRANSPORT_FAILURE_CODE, ApiClient
from secondary_scheduler.kube.kubeconfig import Connection
from secondary_scheduler.scheduler.metrics import SchedulerMetrics


def test_an_api_clients_requests_are_counted_by_code_method_and_host() -> None:
    metrics = SchedulerMetrics()
    client = ApiClient(Connection(server="https://10.0.0.1:6443/"))
    assert client.host == "10.0.0.1:6443"
    client.on_response = metrics.count_requests_of(client.host)
    client.on_response("GET", "403")
    client.on_response("GET", "403")
    client.on_response("POST", TRANSPORT_FAILURE_CODE)
    sample = metrics.registry.get_sample_value
    assert (
        sample("rest_client_requests_total", {"code": "403", "method": "GET", "host": "10.0.0.1:6443"}) == 2
    )
    assert (
        sample("rest_client_requests_total", {"code": "<error>", "method": "POST", "host": "10.0.0.1:6443"})
        == 1
    )
