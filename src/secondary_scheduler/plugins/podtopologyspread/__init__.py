"""PodTopologySpread: spread matching pods evenly over topology domains (zones, nodes...).

`plugin.PodTopologySpread`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
