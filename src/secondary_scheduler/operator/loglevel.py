"""spec.operatorLogLevel, applied to the running operator (upstream's loglevel controller).

Changing the CR changes verbosity at once; no restart. Normal keeps kopf to warnings,
Debug shows our decisions, Trace adds kopf's, TraceAll also every HTTP request.
"""

from __future__ import annotations

import logging

from secondary_scheduler.kube.client import HTTP_LOGGER

OURS = "secondary_scheduler"
KOPF = "kopf"
HTTP = ("aiohttp", HTTP_LOGGER)

_LEVELS: dict[str, tuple[int, int, int]] = {
    # operatorLogLevel: (our loggers, kopf's, the HTTP libraries')
    "Normal": (logging.INFO, logging.WARNING, logging.WARNING),
    "Debug": (logging.DEBUG, logging.INFO, logging.WARNING),
    "Trace": (logging.DEBUG, logging.DEBUG, logging.WARNING),
    "TraceAll": (logging.DEBUG, logging.DEBUG, logging.DEBUG),
}


def apply(level: str) -> None:
    """Set the operator's loggers for `level` (empty or unknown: Normal)."""
    ours, kopf, http = _LEVELS.get(level, _LEVELS["Normal"])
    for name, value in {OURS: ours, KOPF: kopf, **dict.fromkeys(HTTP, http)}.items():
        logging.getLogger(name).setLevel(value)
