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
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

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
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names(namespace)[0])])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names(namespace)]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return ServingCert(
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


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
