"""Self-signed serving certificates, for when nobody hands us one.

kube-scheduler serves HTTPS even without --tls-cert-file, with a certificate it makes up
at start; the operator does the same for the scheduler's Service where OpenShift's
service-ca is absent. Both use this one function.
"""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def subject_alternative_names(hosts: list[str]) -> x509.SubjectAlternativeName:
    """IP SANs for addresses, DNS SANs for the rest, in the order given."""
    alternative_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alternative_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternative_names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(alternative_names)


def self_signed(
    common_name: str, hosts: list[str], days: int = 365, now: datetime.datetime | None = None
) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM): an ECDSA P-256 leaf for `hosts` (DNS names or IP addresses)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = now or datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(subject_alternative_names(hosts), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
