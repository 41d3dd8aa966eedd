"""A self-signed serving certificate for clusters without OpenShift's service-ca (ours).

Upstream mounts the Secret that service-ca creates for the `metrics` Service. On vanilla
Kubernetes nobody creates it and the scheduler pod waits in ContainerCreating forever, so
there the operator makes the Secret itself and renews it before it expires.
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass

from cryptography import x509

from secondary_scheduler.certs import self_signed
from secondary_scheduler.operator import names

VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ServingCert:
    cert_pem: bytes
    key_pem: bytes

    def secret_data(self) -> dict[str, str]:
        return {
            "tls.crt": base64.b64encode(self.cert_pem).decode(),
            "tls.key": base64.b64encode(self.key_pem).decode(),
        }


def dns_names(namespace: str) -> list[str]:
    """The names service-ca would put in the certificate of Service `metrics`."""
    service = f"{names.SERVICE}.{namespace}.svc"
    return [service, f"{service}.cluster.local"]


def generate(namespace: str, now: datetime.datetime | None = None) -> ServingCert:
    """A fresh ECDSA P-256 key and a certificate for the metrics Service, valid for a year."""
    hosts = dns_names(namespace)
    return ServingCert(*self_signed(hosts[0], hosts, days=VALIDITY.days, now=now))


def reusable(data: dict[str, str] | None, namespace: str, now: datetime.datetime | None = None) -> bool:
    """Whether a Secret's base64 `data` holds a certificate for this namespace that is not near expiry."""
    if not data or "tls.crt" not in data or "tls.key" not in data:
        return False
    now = now or datetime.datetime.now(datetime.UTC)
    try:
        certificate = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    return (
        san.get_values_for_type(x509.DNSName) == dns_names(namespace)
        and certificate.not_valid_after_utc - RENEW_BEFORE > now
    )


def from_secret_data(data: dict[str, str]) -> ServingCert:
    return ServingCert(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))
