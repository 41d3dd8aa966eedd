"""Which metric source a plugin's args name, as a key: equal keys share one collector.

Two plugins (or profiles) that read the same Prometheus with the same credentials must not
each poll it; everything that changes what a fetch returns is part of the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from secondary_scheduler.plugins.trimaran.args import SecretKeyRef, TrimaranArgs

WATCHER = "LoadWatcher"
"""The ``kind`` of a load-watcher service source (``watcherAddress``)."""


@dataclass(frozen=True)
class MetricSource:
    """A metric source: a provider type (or a load-watcher service), its address and credentials."""

    kind: str
    address: str = ""
    token: str = ""
    token_file: str = ""
    token_secret_ref: SecretKeyRef | None = None
    ca_file: str = ""
    insecure_skip_verify: bool = False

    @classmethod
    def of(cls, args: TrimaranArgs) -> MetricSource:
        """The source the args read from; a non-empty watcherAddress wins over the provider, as upstream.

        Addresses differing only in a trailing slash are the same source.
        """
        if args.uses_watcher:
            return cls(kind=WATCHER, address=str(args.watcher_address).rstrip("/"))
        provider = args.metric_provider
        return cls(
            kind=provider.type,
            address=provider.address.rstrip("/"),
            token=provider.token,
            token_file=provider.token_file,
            token_secret_ref=provider.token_secret_ref,
            ca_file=provider.ca_file,
            insecure_skip_verify=provider.insecure_skip_verify,
        )

    @property
    def label(self) -> str:
        """How logs and metrics name the source: its kind and address, never its credentials."""
        return f"{self.kind} {self.address}" if self.address else self.kind
