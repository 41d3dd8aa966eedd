"""The Secondary Scheduler operator: a drop-in for OpenShift's, reconciling `SecondaryScheduler`.

`render` builds every object the operator wants from the CR, its ConfigMap and a few facts
about the cluster; `reconcile` applies that plan and reports it on the CR; `controller`
wires both into kopf. `secsched operator render` prints the same plan without a cluster.
"""
