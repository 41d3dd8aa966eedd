"""What the soak's probe reads: our /metrics page, the task dump, /proc's socket tables."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from bench.soak.probe import established_to, read_metrics, read_tasks, socket_inodes, task_kind
from prometheus_client import generate_latest

from secondary_scheduler.scheduler.metrics import SchedulerMetrics


def test_the_metrics_page_gives_scheduled_attempts_the_sli_and_the_queues() -> None:
    metrics = SchedulerMetrics()
    for seconds in (0.0015, 0.003, 0.003):
        metrics.attempt_duration.labels("scheduled", "secondary-scheduler").observe(seconds)
        metrics.schedule_attempts.labels("scheduled", "secondary-scheduler").inc()
    metrics.attempt_duration.labels("scheduled", "other").observe(0.0005)
    metrics.attempt_duration.labels("unschedulable", "secondary-scheduler").observe(0.5)
    metrics.schedule_attempts.labels("unschedulable", "secondary-scheduler").inc()
    metrics.pod_scheduling_sli_duration.labels("1").observe(0.02)
    metrics.pod_scheduling_sli_duration.labels("2").observe(0.05)
    metrics.pending_pods.labels("active").set(3)
    metrics.pending_pods.labels("unschedulable").set(7)

    reading = read_metrics(generate_latest(metrics.registry).decode())

    attempts = dict(reading.attempt_buckets)
    assert attempts[0.001] == 1  # the other profile's attempt: every profile counts
    assert attempts[0.002] == 2
    assert attempts[0.004] == attempts[float("inf")] == 4  # the unschedulable attempt is not one
    assert [bound for bound, _ in reading.attempt_buckets] == sorted(attempts)
    assert dict(reading.sli_buckets)[float("inf")] == 2  # every attempt count
    assert reading.scheduled == 3
    assert reading.pending == {"active": 3, "unschedulable": 7}


def test_the_task_dump_names_every_task() -> None:
    dump = (
        "task reflector-pods: pending\n  File ...\n\n"
        "task bind-ns/pod-1: pending\n\ntask Task-17: done\n\n"
        "thread MainThread\n  File ...\n"
    )
    assert read_tasks(dump) == ["reflector-pods", "bind-ns/pod-1", "Task-17"]
    assert [
        task_kind(name) for name in ("bind-ns/pod-12", "event-sender-3", "Task-881", "reflector-pods")
    ] == [
        "bind-",
        "event-sender-",
        "Task-",
        "reflector-pods",
    ]


TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A1B2 0100007F:1A0B 01 00000000:00000000 00:00000000 00000000     0        0 111 1
   1: 0100007F:A1B3 0100007F:1A0B 06 00000000:00000000 00:00000000 00000000     0        0 222 1
   2: 0100007F:A1B4 0100007F:1A0B 01 00000000:00000000 00:00000000 00000000     0        0 333 1
   3: 0100007F:A1B5 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 444 1
"""


def test_connections_count_the_processes_established_sockets_to_the_port() -> None:
    port = 0x1A0B
    # 222 is in TIME_WAIT, 333 belongs to another process, 444 goes elsewhere.
    assert established_to(port, [TABLE], {"111", "222", "444"}) == 1
    assert established_to(port, [TABLE, TABLE], {"111", "333"}) == 4


async def test_the_socket_inodes_are_this_processes_own() -> None:
    accepted = asyncio.Event()
    release = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await release.wait()
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    await accepted.wait()
    try:
        tables = [Path(f"/proc/{os.getpid()}/net/{name}").read_text() for name in ("tcp", "tcp6")]
        assert established_to(port, tables, socket_inodes(os.getpid())) == 1
    finally:
        release.set()
        writer.close()
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("text", ["", "# nothing here\n"])
def test_an_empty_page_reads_as_nothing(text: str) -> None:
    reading = read_metrics(text)
    assert (reading.attempt_buckets, reading.sli_buckets, reading.scheduled, reading.pending) == (
        (),
        (),
        0.0,
        {},
    )
