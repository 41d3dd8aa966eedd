"""Certificates and keys for a local control plane, generated with `cryptography`.

One CA signs the API server's serving certificate and a client certificate per component;
the service-account key signs ServiceAccount tokens. Identities (CN, O) follow what
kube-apiserver's RBAC bootstrap policy expects, so components get exactly their roles.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)

# file stem -> (common name, organisation): the identity each component authenticates as.
CLIENT_IDENTITIES = {
    "admin": ("kubernetes-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", None),
    "scheduler": ("system:kube-scheduler", None),
    "kwok": ("kwok-controller", "system:masters"),
}


@dataclass(frozen=True)
class Pki:
    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    def client_cert(self, name: str) -> Path:
        return self.directory / f"{name}.crt"

    def client_key(self, name: str) -> Path:
        return self.directory / f"{name}.key"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _name(common_name: str, organisation: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organisation:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def issue_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    hosts: list[str],
    cert_path: Path,
    key_path: Path,
) -> None:
    """A TLS server certificate for `hosts` (names and IPs), signed by the CA."""
    key = _key()
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        _builder(_name(common_name), ca_cert.subject, key.public_key())
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key_path, key)


def load_ca(pki: Pki) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def create(directory: Path, hosts: list[str]) -> Pki:
    """Write a fresh CA, the API server's serving pair, client pairs and the SA key."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = _key()
    ca_name = _name("secsched-local-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.ca_key, ca_key)

    issue_serving_cert(ca_cert, ca_key, "kube-apiserver", hosts, pki.serving_cert, pki.serving_key)

    for stem, (common_name, organisation) in CLIENT_IDENTITIES.items():
        key = _key()
        cert = (
            _builder(_name(common_name, organisation), ca_name, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        pki.client_cert(stem).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pki.client_key(stem), key)

    # ServiceAccount tokens are signed with RS256 by default, so this key is RSA.
    _write_key(pki.service_account_key, rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return pki
