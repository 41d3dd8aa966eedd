"""The pod-set fingerprint a topology exporter publishes with its NodeResourceTopology.

The overreserve cache trusts a node's new NodeResourceTopology only once it reflects the
pods the scheduler knows are on the node: the exporter signs the set of pods it accounted
for (namespace/name, order-free) and the scheduler recomputes the signature from its own
pod list. Both sides must hash exactly as github.com/k8stopologyawareschedwg/podfingerprint
v0.2.2 does (XXH64 of the name seeded with XXH64 of the namespace; sorted; hashed again),
so the local cluster's exporter and upstream's scheduler agree with ours.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

PREFIX = "pfp0"
VERSION = "v001"
ATTRIBUTE = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD = "nodeTopologyPodsFingerprintMethod"
ANNOTATION = "topology.node.k8s.io/fingerprint"
METHOD_ALL = "all"
METHOD_WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"

_MASK = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261


class FingerprintError(ValueError):
    """A published fingerprint that is malformed, of another version, or of another pod set."""


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(accumulator: int, lane: int) -> int:
    accumulator = (accumulator + lane * _P2) & _MASK
    return (_rotl(accumulator, 31) * _P1) & _MASK


def _merge(accumulator: int, value: int) -> int:
    accumulator ^= _round(0, value)
    return (accumulator * _P1 + _P4) & _MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data`` (the reference algorithm; inputs here are a few bytes to a few KiB)."""
    length = len(data)
    offset = 0
    if length >= 32:
        v1 = (seed + _P1 + _P2) & _MASK
        v2 = (seed + _P2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - _P1) & _MASK
        while offset + 32 <= length:
            a, b, c, d = struct.unpack_from("<4Q", data, offset)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            offset += 32
        hashed = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for lane in (v1, v2, v3, v4):
            hashed = _merge(hashed, lane)
    else:
        hashed = (seed + _P5) & _MASK
    hashed = (hashed + length) & _MASK
    while offset + 8 <= length:
        (lane,) = struct.unpack_from("<Q", data, offset)
        hashed ^= _round(0, lane)
        hashed = (_rotl(hashed, 27) * _P1 + _P4) & _MASK
        offset += 8
    if offset + 4 <= length:
        (word,) = struct.unpack_from("<I", data, offset)
        hashed ^= (word * _P1) & _MASK
        hashed = (_rotl(hashed, 23) * _P2 + _P3) & _MASK
        offset += 4
    while offset < length:
        hashed ^= (data[offset] * _P5) & _MASK
        hashed = (_rotl(hashed, 11) * _P1) & _MASK
        offset += 1
    hashed ^= hashed >> 33
    hashed = (hashed * _P2) & _MASK
    hashed ^= hashed >> 29
    hashed = (hashed * _P3) & _MASK
    hashed ^= hashed >> 32
    return hashed


def pod_hash(namespace: str, name: str) -> int:
    return xxh64(name.encode(), xxh64(namespace.encode()))


def sign(pods: Iterable[tuple[str, str]]) -> str:
    """The signature of a set of (namespace, name) pods, as the exporter publishes it."""
    hashes = sorted(pod_hash(namespace, name) for namespace, name in pods)
    digest = xxh64(b"".join(struct.pack("<Q", value) for value in hashes))
    return f"{PREFIX}{VERSION}{digest:016x}"


def check(pods: Iterable[tuple[str, str]], expected: str) -> None:
    """Raise FingerprintError unless ``expected`` is the signature of ``pods``."""
    if len(expected) < 16 or expected[:4] != PREFIX:
        raise FingerprintError(f"malformed fingerprint {expected!r}")
    if expected[4:8] != VERSION:
        raise FingerprintError(f"incompatible fingerprint version {expected[4:8]!r} (want {VERSION})")
    computed = sign(pods)
    if computed != expected:
        raise FingerprintError(f"fingerprint mismatch: computed {computed}, published {expected}")
