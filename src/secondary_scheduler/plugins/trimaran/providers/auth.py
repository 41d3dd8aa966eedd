"""How a provider authenticates: the TLS trust it uses and the bearer token it sends.

Unlike upstream, ``insecureSkipVerify`` applies whether or not there is a token, and a
private CA can be trusted with ``caFile`` instead of skipping verification. Tokens from a
file or a Secret are read on every refresh, so rotated tokens (projected ServiceAccount
tokens, OpenShift's) are picked up without a restart.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ssl
from pathlib import Path

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable, resource_path
from secondary_scheduler.plugins.trimaran.args import SecretKeyRef
from secondary_scheduler.plugins.trimaran.providers import FETCH_TIMEOUT_SECONDS, FetchError
from secondary_scheduler.plugins.trimaran.source import MetricSource


def tls_context(source: MetricSource) -> ssl.SSLContext:
    """The trust for an https address: system CAs, or ``caFile``; none at all with insecureSkipVerify."""
    try:
        context = ssl.create_default_context(cafile=source.ca_file or None)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(
            f"metricProvider.caFile {source.ca_file!r} cannot be read as PEM certificates ({error}): "
            "mount the CA bundle at that path, or remove caFile to trust the system CAs"
        ) from error
    if source.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class BearerToken:
    """The token a provider sends, from whichever of token, tokenFile or tokenSecretRef is set."""

    def __init__(self, source: MetricSource, api: ApiClient | None) -> None:
        if source.token_secret_ref is not None and api is None:
            raise ValueError(
                "metricProvider.tokenSecretRef needs the Kubernetes API client, which was not given "
                "to the Trimaran services: use tokenFile, or run inside the scheduler"
            )
        self.source = source
        self.api = api

    async def get(self) -> str | None:
        """The token to send now, or None for none; raises FetchError naming the field to fix."""
        source = self.source
        if source.token:
            return source.token
        if source.token_file:
            try:
                return Path(source.token_file).read_text().strip()
            except OSError as error:
                raise FetchError(
                    f"metricProvider.tokenFile {source.token_file!r} cannot be read ({error.strerror}): "
                    "mount the token at that path"
                ) from error
        if source.token_secret_ref is not None and self.api is not None:
            return await _from_secret(self.api, source.token_secret_ref)
        return None


async def _from_secret(api: ApiClient, ref: SecretKeyRef) -> str:
    """The token in a Secret's key, read through the scheduler's API client."""
    where = f"metricProvider.tokenSecretRef {ref.namespace}/{ref.name} key {ref.key!r}"
    path = resource_path("v1", "secrets", ref.namespace, ref.name)
    try:
        secret = await asyncio.wait_for(api.get(path), FETCH_TIMEOUT_SECONDS)
    except ApiError as error:
        hint = (
            "the Secret does not exist"
            if error.not_found
            else "the scheduler's ServiceAccount needs `get` on secrets in that namespace"
            if error.status == 403
            else "the API server refused"
        )
        raise FetchError(f"{where}: {error} ({hint})") from error
    except (TimeoutError, ApiUnavailable) as error:
        raise FetchError(f"{where}: the API server did not answer ({error!r})") from error
    encoded = (secret.get("data") or {}).get(ref.key)
    if not encoded:
        raise FetchError(f"{where}: the Secret has no such key (or it is empty)")
    try:
        return base64.b64decode(encoded).decode().strip()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise FetchError(f"{where}: the value is not base64-encoded text") from error
