"""The local control plane: build, run and feed a real Kubernetes cluster on one machine."""
