"""The one Kubernetes API layer: kubeconfig, auth, retries, list+watch, quantities."""
