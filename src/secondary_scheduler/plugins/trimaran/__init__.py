"""Trimaran load-aware plugins, scoring exactly as kubernetes-sigs/scheduler-plugins v0.34.7 does.

Per plugin, ``<plugin>/scoring.py`` is the pure, vectorised maths and ``<plugin>/plugin.py`` the
framework plugin over the NodeTable, registered in ``plugins.registry``. Shared parts:
``watchermetrics`` and ``resourcestats`` (upstream's data and helpers), ``providers`` and
``collector``/``collectorset`` (fetching metrics, one collector per source), ``nodeusage`` (a
snapshot as arrays, with our staleness and fallback rules), ``recentlyscheduled``,
``telemetry``, ``notes`` and ``services`` (what the runtime registers in the Handle).
"""
