"""VolumeBinding: claims bound or bindable on the chosen node, and bound before the pod is.

`volume_binding.VolumeBinding`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
