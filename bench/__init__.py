"""Benchmarks of the secondary scheduler against the upstream kube-scheduler (`make bench`).

Not a test: it starts a real control plane with thousands of KWOK nodes, runs both
schedulers on it in turn with the same profile and client limits, and writes what it
measured to docs/benchmarks.md. Each kind of measurement is a *section* (see
`bench.sections`): `python -m bench --only throughput` reruns one and leaves the others
in the document as they were.
"""
