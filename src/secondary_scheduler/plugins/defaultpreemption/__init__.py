"""DefaultPreemption: when no node fits, evict lower-priority pods where that makes room.

`plugin.DefaultPreemption`, args in `args.py`. Nothing is imported here, so the
config side loads without the plugin's code (``plugins.catalog``).
"""
