"""The `secsched` command line."""
