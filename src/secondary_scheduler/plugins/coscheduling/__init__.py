"""Coscheduling: gang scheduling with PodGroups, as scheduler-plugins v0.34.7 does it.

`plugin.Coscheduling`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
