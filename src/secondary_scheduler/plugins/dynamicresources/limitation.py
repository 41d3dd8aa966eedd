"""What DynamicResources does not do yet, in the words ``config validate`` uses.

A module of its own so the in-tree catalog (``plugins.catalog``) can say it without
importing the plugin (and the framework with it).
"""

ENABLED_WARNING = (
    "DynamicResources does not allocate ResourceClaims here: pods with spec.resourceClaims are "
    "refused (FailedScheduling) rather than bound without their devices"
)
