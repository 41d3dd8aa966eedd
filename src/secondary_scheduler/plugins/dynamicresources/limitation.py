"""What DynamicResources does not do yet, in the words ``config validate`` uses.

A module of its own so the in-tree catalog (``plugins.catalog``) can say it without
importing the plugin (and the framework with it).
"""

REFUSED_LIBRARIES = (
    "ext.Strings' format() and strings.quote(), ext.Lists (lists.range, slice, flatten, distinct, "
    "reverse, sort, sortBy, first, last), two-variable comprehensions, the URL, IP, CIDR and format "
    "libraries, optional types"
)
"""The parts of 1.34's base CEL environment the selector evaluator (``cel_env``) refuses: its
run-time error and the warning below name them from here."""

ENABLED_WARNING = (
    "DynamicResources allocates ResourceClaims with structured parameters as kube-scheduler 1.34 does, "
    "but refuses (FailedScheduling, naming the field) claims and ResourceSlices that use features 1.34 "
    "leaves off (partitionable devices, device taints, consumable capacity, binding conditions) and "
    f"selectors that use the parts of 1.34's CEL environment this scheduler lacks: {REFUSED_LIBRARIES} "
    "(standard CEL, quantity(), semver(), ext.Strings' other functions, the lists library, ext.Sets and "
    "regex find/findAll are evaluated)"
)
