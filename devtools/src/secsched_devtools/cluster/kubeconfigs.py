"""Kubeconfig files for the local cluster's components and its admin."""

from __future__ import annotations

from pathlib import Path

import yaml

from secsched_devtools.cluster.pki import Pki


def write_kubeconfig(
    path: Path, server: str, pki: Pki, identity: str, cluster_name: str = "secsched"
) -> Path:
    """A kubeconfig that authenticates as `identity` (a client certificate in the PKI)."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster_name, "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)}}
        ],
        "users": [
            {
                "name": identity,
                "user": {
                    "client-certificate": str(pki.client_cert(identity)),
                    "client-key": str(pki.client_key(identity)),
                },
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": identity}}],
        "current-context": cluster_name,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path


def write_token_kubeconfig(
    path: Path, server: str, ca_file: Path, token: str, name: str = "secsched"
) -> Path:
    """A kubeconfig for a ServiceAccount token, as a pod of that account would authenticate."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "token"}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path
