"""LoadAwarePacking: our load-aware plugin, built to fix where Trimaran's plugins place VMs badly.

Modules, one concern each: ``args`` (the config), ``estimator`` (how much CPU a pod will use,
learned from what comparable pods use), ``inflight`` (pods bound since the metrics window
began, until the metrics show them), ``history`` (each node's peak over a window and its
daily / weekly pattern), ``slotloads`` (what a snapshot gives every node, laid out per table
slot once), ``scoring`` (the pure, vectorised maths), ``notes`` and
``telemetry`` (what it says about degraded inputs), ``plugin`` (Score and Filter over the
NodeTable). It reads metrics through Trimaran's shared collectors and providers. Design and
measurements: docs/loadaware.md.
"""
