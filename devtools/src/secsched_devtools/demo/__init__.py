"""`secsched demo`: the whole system on a local cluster, compared with the upstream schedulers."""
