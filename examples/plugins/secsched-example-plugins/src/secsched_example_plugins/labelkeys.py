"""Label keys in args are checked when the config is validated, not when the first pod comes."""

from __future__ import annotations

import re

# Kubernetes' qualified name: an optional DNS-subdomain prefix and "/", then a name of
# at most 63 characters that starts and ends with an alphanumeric.
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_label_key(key: str) -> str:
    """``key`` if it is a valid label key; a ValueError the config loader shows at the key's line."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        raise ValueError(f"{key!r} is not a valid label key: the prefix must be a DNS subdomain")
    if not _NAME.match(name):
        raise ValueError(
            f"{key!r} is not a valid label key: the name part must be 1-63 characters, "
            "alphanumerics with '-', '_' or '.' inside (e.g. example.com/tier)"
        )
    return key
