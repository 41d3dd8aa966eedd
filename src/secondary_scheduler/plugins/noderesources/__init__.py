"""NodeResourcesFit and NodeResourcesBalancedAllocation: requests against allocatable.

`fit.Fit` and `balanced_allocation.BalancedAllocation`, args in `args.py`. Nothing is
imported here, so the config side loads without the plugin's code (``plugins.catalog``).
"""
