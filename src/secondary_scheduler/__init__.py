"""secondary-scheduler: a load-aware, kube-scheduler-compatible secondary scheduler."""

__version__ = "0.1.0"
