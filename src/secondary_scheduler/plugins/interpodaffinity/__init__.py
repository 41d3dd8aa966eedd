"""InterPodAffinity: place pods near (affinity) or away from (anti-affinity) other pods.

`plugin.InterPodAffinity`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
