"""What DynamicResources does not do yet, in the words ``config validate`` uses.

A module of its own so the in-tree catalog (``plugins.catalog``) can say it without
importing the plugin (and the framework with it).
"""

ENABLED_WARNING = (
    "DynamicResources allocates ResourceClaims with structured parameters as kube-scheduler 1.34 does, "
    "but refuses (FailedScheduling, naming the field) claims and ResourceSlices that use features 1.34 "
    "leaves off (partitionable devices, device taints, consumable capacity, binding conditions) and "
    "selectors that use CEL libraries beyond standard CEL, quantity() and semver()"
)
