"""The node-load exporter: serves the load model as Prometheus series, scraped by Prometheus.

It watches the cluster's nodes and pods and publishes, per node,
`instance:node_cpu:ratio` and `instance:node_memory_utilisation:ratio` with
`instance=<node name>`: the recording rules load-watcher and Trimaran query.
With the model's ``podSeries`` on, it also publishes each pod's usage under cAdvisor's names
(`container_cpu_usage_seconds_total`, `container_memory_working_set_bytes`), which is what
`secsched snapshot --history` records from a real cluster's kubelets.

HTTP: GET /metrics (Prometheus text), GET /load (model and current values as JSON),
PUT /load (change base loads or the pod factor; see loadmodel.LoadModel.update).
Run as `python -m secsched_devtools.cluster.loadexporter --kubeconfig K --port P`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from aiohttp import web

from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.podphase import is_terminal
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import ObjectStore
from secsched_devtools.cluster.loadmodel import LoadModel, pod_usage

log = logging.getLogger("loadexporter")

SERIES = (("instance:node_cpu:ratio", 0), ("instance:node_memory_utilisation:ratio", 1))
POD_CPU_SERIES = "container_cpu_usage_seconds_total"
POD_MEMORY_SERIES = "container_memory_working_set_bytes"


class Exporter:
    def __init__(self, model: LoadModel, state_file: Path | None) -> None:
        self.model = model
        self.state_file = state_file
        self.nodes = ObjectStore()
        self.pods = ObjectStore()
        self.cpu_seconds: dict[tuple[str, str], tuple[float, float, float]] = {}
        """(namespace, pod) -> (CPU seconds so far, when counted, cores since): the counter's state."""

    def _pods_by_node(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for pod in self.pods.objects.values():
            node = pod.get("spec", {}).get("nodeName")
            if node:
                grouped[node].append(pod)
        return grouped

    def current(self, noisy: bool) -> dict[str, tuple[float, float]]:
        nodes = {obj["metadata"]["name"]: obj for obj in self.nodes.objects.values()}
        return self.model.utilisation(nodes, self._pods_by_node(), noisy=noisy)

    async def metrics(self, _: web.Request) -> web.Response:
        values = self.current(noisy=True)
        lines = []
        for series, index in SERIES:
            lines.append(f"# TYPE {series} gauge")
            lines.extend(
                f'{series}{{instance="{node}"}} {ratios[index]:.6f}'
                for node, ratios in sorted(values.items())
            )
        if self.model.pod_series:
            lines.extend(self._pod_series(time.time()))
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    def _pod_series(self, now: float) -> list[str]:
        """Each running bound pod's model usage as cAdvisor names it (on its first container): CPU as a
        counter of seconds, integrated from scrape to scrape at the cores the model gave at the last
        one, and memory as a gauge of bytes."""
        cpu_lines, memory_lines = [f"# TYPE {POD_CPU_SERIES} counter"], [f"# TYPE {POD_MEMORY_SERIES} gauge"]
        counted: dict[tuple[str, str], tuple[float, float, float]] = {}
        for pod in self.pods.objects.values():
            spec, metadata = pod.get("spec") or {}, pod.get("metadata") or {}
            node = spec.get("nodeName")
            if not node or is_terminal(pod):
                continue
            key = (metadata.get("namespace", ""), metadata.get("name", ""))
            millicores, memory = pod_usage(pod, self.model.pod_factor)
            total, since, cores = self.cpu_seconds.get(key, (0.0, now, 0.0))
            total += cores * (now - since)
            counted[key] = (total, now, millicores / 1000)
            container = ((spec.get("containers") or [{}])[0]).get("name", "")
            labels = f'namespace="{key[0]}",pod="{key[1]}",container="{container}",node="{node}"'
            cpu_lines.append(f"{POD_CPU_SERIES}{{{labels}}} {total:.6f}")
            memory_lines.append(f"{POD_MEMORY_SERIES}{{{labels}}} {memory:.0f}")
        self.cpu_seconds = counted
        return cpu_lines + memory_lines

    async def get_load(self, _: web.Request) -> web.Response:
        values = {
            node: {"cpu": cpu, "memory": memory} for node, (cpu, memory) in self.current(noisy=False).items()
        }
        return web.json_response({**self.model.to_dict(), "current": values})

    async def put_load(self, request: web.Request) -> web.Response:
        try:
            self.model.update(await request.json())
        except (ValueError, TypeError, KeyError) as error:
            return web.json_response({"error": str(error)}, status=400)
        if self.state_file is not None:
            self.state_file.write_text(json.dumps(self.model.to_dict(), indent=2))
        return await self.get_load(request)


async def serve(args: argparse.Namespace) -> None:
    model = LoadModel(seed=args.seed)
    state_file = Path(args.state) if args.state else None
    if state_file is not None and state_file.exists():
        model.update(json.loads(state_file.read_text()))
    exporter = Exporter(model, state_file)
    async with ApiClient(
        kubeconfig.load(args.kubeconfig), qps=0, burst=0, user_agent="secsched-loadexporter"
    ) as api:
        watchers = [
            asyncio.create_task(Reflector(api, "/api/v1/nodes", exporter.nodes).run()),
            asyncio.create_task(Reflector(api, "/api/v1/pods", exporter.pods).run()),
        ]
        app = web.Application()
        app.add_routes(
            [
                web.get("/metrics", exporter.metrics),
                web.get("/load", exporter.get_load),
                web.put("/load", exporter.put_load),
            ]
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, args.address, args.port).start()
        log.info("serving node load on http://%s:%d/metrics", args.address, args.port)
        try:
            await asyncio.gather(*watchers)
        finally:
            await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", help="JSON file that keeps the base loads across restarts")
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise generator")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
