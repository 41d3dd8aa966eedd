"""DynamicResources (DRA): ResourceClaims allocated from ResourceSlices, as kube-scheduler 1.34.

``dynamic_resources.DynamicResources`` is the plugin; ``allocator`` (with ``pools`` and
``cel_env``) the structured-parameters allocator; ``claims`` how a pod's claims are found;
its config warning in ``limitation.py``. Nothing is imported here, so the config side loads
without the plugin's code (``plugins.catalog``).
"""
