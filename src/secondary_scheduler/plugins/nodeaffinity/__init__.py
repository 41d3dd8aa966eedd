"""NodeAffinity: nodeSelector and node affinity, required (Filter) and preferred (Score).

`node_affinity.NodeAffinity`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
