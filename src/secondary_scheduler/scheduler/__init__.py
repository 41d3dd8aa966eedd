"""The scheduler runtime: queue, cache, binding, leader election, servers and the CLI."""
