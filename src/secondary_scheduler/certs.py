"""The one place certificates are built: keys, self-signed and CA-signed certificates, PEM files.

kube-scheduler serves HTTPS even without --tls-cert-file, with a certificate it makes up at
start; the operator does the same for the scheduler's Service where OpenShift's service-ca is
absent; the local cluster needs a CA, the API server's serving certificate and a client
certificate per component. All of them are ECDSA P-256 certificates built here.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_DAYS = 365
BACKDATE = datetime.timedelta(minutes=5)
"""Certificates start a little in the past, so a peer whose clock lags still accepts them."""

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key (a CA's pair signs others)."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return private_key_pem(self.key)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: PrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM, the form every Kubernetes component reads."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def distinguished_name(common_name: str, organisation: str | None = None) -> x509.Name:
    """CN (and O): what Kubernetes reads as a client certificate's user (and group)."""
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organisation:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(attributes)


def subject_alternative_names(hosts: list[str]) -> x509.SubjectAlternativeName:
    """IP SANs for addresses, DNS SANs for the rest, in the order given."""
    alternative_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alternative_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternative_names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(alternative_names)


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: KeyPair | None,
    extensions: list[tuple[x509.ExtensionType, bool]],
    days: int,
    now: datetime.datetime | None,
) -> KeyPair:
    """A certificate for ``key``, signed by ``issuer`` (None: by ``key`` itself)."""
    now = now or datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.cert.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return KeyPair(builder.sign(issuer.key if issuer else key, hashes.SHA256()), key)


def _leaf(usage: x509.ObjectIdentifier) -> list[tuple[x509.ExtensionType, bool]]:
    return [
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.ExtendedKeyUsage([usage]), False),
    ]


def certificate_authority(common_name: str, days: int = DEFAULT_DAYS) -> KeyPair:
    """A self-signed CA that may sign certificates (and CRLs), nothing else."""
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=True,
        crl_sign=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    extensions: list[tuple[x509.ExtensionType, bool]] = [
        (x509.BasicConstraints(ca=True, path_length=None), True),
        (usage, True),
    ]
    return _issue(distinguished_name(common_name), new_key(), None, extensions, days, None)


def serving(
    common_name: str,
    hosts: list[str],
    issuer: KeyPair | None = None,
    days: int = DEFAULT_DAYS,
    now: datetime.datetime | None = None,
) -> KeyPair:
    """A TLS server certificate for ``hosts`` (DNS names or IP addresses), signed by ``issuer``
    or, without one, by its own key (self-signed)."""
    extensions = [(subject_alternative_names(hosts), False), *_leaf(ExtendedKeyUsageOID.SERVER_AUTH)]
    return _issue(distinguished_name(common_name), new_key(), issuer, extensions, days, now)


def client(common_name: str, organisation: str | None, issuer: KeyPair, days: int = DEFAULT_DAYS) -> KeyPair:
    """A TLS client certificate for user ``common_name`` (in group ``organisation``)."""
    subject = distinguished_name(common_name, organisation)
    return _issue(subject, new_key(), issuer, _leaf(ExtendedKeyUsageOID.CLIENT_AUTH), days, None)


def self_signed(
    common_name: str, hosts: list[str], days: int = DEFAULT_DAYS, now: datetime.datetime | None = None
) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM): a self-signed serving certificate for ``hosts``."""
    pair = serving(common_name, hosts, days=days, now=now)
    return pair.cert_pem, pair.key_pem


def write_key(path: str | Path, key: PrivateKey | bytes) -> None:
    """Write a private key (or its PEM) readable by its owner only."""
    data = key if isinstance(key, bytes) else private_key_pem(key)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.chmod(path, 0o600)  # an existing file keeps its mode through os.open


def write_pair(cert_path: str | Path, key_path: str | Path, cert: bytes, key: bytes) -> None:
    """Write a certificate and its key (PEM) to files, the key readable by its owner only."""
    Path(cert_path).write_bytes(cert)
    write_key(key_path, key)
