"""`make soak`: an hour of churn against our scheduler, and whether it stays flat.

Our scheduler runs as its own process (`secsched scheduler`, a load-aware profile reading the
local cluster's Prometheus) while pods are created and deleted at a steady rate, KWOK nodes come
and go, and the node-load metrics flap (the exporter or Prometheus away for a while, the load
changing). A probe samples the process from outside: RSS, threads and open files from /proc,
its connections to the API server, its asyncio tasks (from --profiling's task dump) and its
scheduling-latency histograms (/metrics). The analysis says how flat each stayed and fails the
run on growth beyond stated bounds.

Modules: `options` (what to run, the bounds), `workload` (the pods), `churn` (pods, nodes and
metrics changing), `probe` (one sample of the process), `analysis` (pure: slopes, windows,
quantiles, the verdict), `report` (the Markdown section of docs/reliability.md), `run` (the
order of things) and `__main__` (the command line).
"""
