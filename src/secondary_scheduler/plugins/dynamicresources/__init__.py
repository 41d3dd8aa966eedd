"""DynamicResources (DRA): refused loudly until ResourceClaim allocation is implemented.

`dynamic_resources.DynamicResources`, its config warning in `limitation.py`. Nothing is
imported here, so the config side loads without the plugin's code (``plugins.catalog``).
"""
