"""Certificates and keys for a local control plane, built by `secondary_scheduler.certs`.

One CA signs the API server's serving certificate and a client certificate per component;
the service-account key signs ServiceAccount tokens. Identities (CN, O) follow what
kube-apiserver's RBAC bootstrap policy expects, so components get exactly their roles.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa

from secondary_scheduler import certs

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


def create(directory: Path, hosts: list[str]) -> Pki:
    """Write a fresh CA, the API server's serving pair, client pairs and the SA key."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca = certs.certificate_authority("secsched-local-ca", days=VALIDITY.days)
    certs.write_pair(pki.ca_cert, pki.ca_key, ca.cert_pem, ca.key_pem)
    serving = certs.serving("kube-apiserver", hosts, issuer=ca, days=VALIDITY.days)
    certs.write_pair(pki.serving_cert, pki.serving_key, serving.cert_pem, serving.key_pem)
    for stem, (common_name, organisation) in CLIENT_IDENTITIES.items():
        pair = certs.client(common_name, organisation, issuer=ca, days=VALIDITY.days)
        certs.write_pair(pki.client_cert(stem), pki.client_key(stem), pair.cert_pem, pair.key_pem)
    # ServiceAccount tokens are signed with RS256 by default, so this key is RSA.
    certs.write_key(pki.service_account_key, rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return pki
