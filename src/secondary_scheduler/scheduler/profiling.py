"""`/debug/pprof/`: what kube-scheduler's --profiling serves, in Python's terms.

Go's pprof endpoints have Python counterparts for the two questions they answer most: where the
CPU goes (`profile?seconds=N`: cProfile over the event loop's thread for N seconds, as pstats
text) and what every task is waiting on (`goroutine`: the stack of every asyncio task and
thread). Served only when profiling is on (`--profiling`, or the config's enableProfiling).
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import pstats
import sys
import threading
import traceback

from aiohttp import web

MAX_PROFILE_SECONDS = 300

_INDEX = """/debug/pprof/
  profile?seconds=30   CPU profile of the scheduler's event loop (cProfile, pstats text)
  goroutine            the stack of every asyncio task and thread
"""


async def _index(_: web.Request) -> web.Response:
    return web.Response(text=_INDEX)


async def _profile(request: web.Request) -> web.Response:
    try:
        seconds = float(request.query.get("seconds", "30"))
    except ValueError:
        return web.Response(status=400, text="seconds must be a number\n")
    if not 0 < seconds <= MAX_PROFILE_SECONDS:
        return web.Response(status=400, text=f"seconds must be in (0, {MAX_PROFILE_SECONDS}]\n")
    profiler = cProfile.Profile()
    try:
        profiler.enable()
    except ValueError:  # another profile is running (cProfile allows one per thread)
        return web.Response(status=409, text="a profile is already being taken\n")
    try:
        await asyncio.sleep(seconds)  # the loop runs everything else on this thread meanwhile
    finally:
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(60)
    return web.Response(text=out.getvalue())


async def _goroutine(_: web.Request) -> web.Response:
    out = io.StringIO()
    for task in asyncio.all_tasks():
        out.write(f"task {task.get_name()}: {'done' if task.done() else 'pending'}\n")
        task.print_stack(file=out)
        out.write("\n")
    frames = sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        out.write(f"thread {thread.name}\n")
        if frame is not None:
            out.write("".join(traceback.format_stack(frame)))
        out.write("\n")
    return web.Response(text=out.getvalue())


def routes() -> list[web.RouteDef]:
    return [
        web.get("/debug/pprof/", _index),
        web.get("/debug/pprof/profile", _profile),
        web.get("/debug/pprof/goroutine", _goroutine),
    ]
