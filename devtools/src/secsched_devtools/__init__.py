"""secondary-scheduler's dev tooling: a real control plane on this machine (`cluster`), the
tour that runs the whole system on it against upstream (`demo`), and what they share with
`bench/` and the tests. Never in the images: the scheduler and the operator ship without it."""
