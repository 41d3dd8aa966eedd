"""The `main()` of the local cluster's own controllers (storage provisioner, topology exporter).

Each runs as a child process of the cluster: it reads a kubeconfig, reconciles until SIGTERM
or SIGINT, and logs to stderr (the cluster sends that to its log file).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Protocol

from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient


class Controller(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


ControllerFactory = Callable[[ApiClient, float], Controller]
"""(API client, resync seconds) -> the controller."""


async def _serve(args: argparse.Namespace, user_agent: str, factory: ControllerFactory) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with ApiClient(kubeconfig.load(args.kubeconfig), qps=0, burst=0, user_agent=user_agent) as api:
        await factory(api, args.resync_seconds).run(stop)
    logging.getLogger(user_agent).info("stopped")


def controller_main(
    description: str, user_agent: str, factory: ControllerFactory, resync_help: str, verbose_help: str
) -> None:
    """Parse `--kubeconfig`, `--resync-seconds` and `-v`, then run the controller until signalled."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--resync-seconds", type=float, default=30.0, help=resync_help)
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    asyncio.run(_serve(args, user_agent, factory))
