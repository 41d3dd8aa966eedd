"""NodeResourceTopologyMatch (scheduler-plugins): NUMA-aware Filter and Score.

`plugin.NodeResourceTopologyMatch`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
