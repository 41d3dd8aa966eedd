"""``TrimaranServices.of`` with a provider factory and a refresh period (how the replay wires its
simulated metrics), and its refusals."""

from __future__ import annotations

import pytest

from secondary_scheduler.framework.handle import Handle, Snapshot
from secondary_scheduler.plugins.trimaran.providers.static import StaticProvider
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs


def test_of_creates_the_services_with_the_given_providers_and_period_on_the_handles_clock() -> None:
    handle = Handle(wall_clock=lambda: 1234.0)
    static = StaticProvider(None)
    services = TrimaranServices.of(handle, provider_factory=lambda source: static, interval=5.0)
    assert handle.services[SERVICE] is services
    assert services.collectors.interval == 5.0
    assert services.collectors.clock() == 1234.0
    assert services.collectors.view_for(TargetLoadPackingArgs()).collector.provider is static
    assert TrimaranServices.of(handle) is services  # the plugins find them
    assert services.recently_scheduled in handle.shared.pod_handlers  # wired as of() wires its own


def test_of_refuses_a_provider_factory_once_the_services_exist() -> None:
    handle = Handle()
    TrimaranServices.of(handle)
    with pytest.raises(ValueError, match="exist already: pass provider_factory and interval to the first"):
        TrimaranServices.of(handle, interval=5.0)


def test_of_refuses_a_provider_factory_for_a_snapshot() -> None:
    handle = Handle(snapshot=Snapshot(now=0.0))
    with pytest.raises(ValueError, match="serves the snapshot's metrics"):
        TrimaranServices.of(handle, provider_factory=lambda source: StaticProvider(None))
