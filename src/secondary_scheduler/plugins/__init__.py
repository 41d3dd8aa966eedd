"""Scheduling plugins: scoring maths, independent of the scheduling framework that calls it.

One folder per plugin, its args model (the config side) in ``args.py``. ``registry`` maps
names to plugin classes (in-tree, installed entry points, ``--plugin``): each command builds
one and hands it down. ``catalog`` states what the config loader needs of the in-tree
plugins (extension points, args models) without importing their code: what the operator
checks ConfigMaps with.
"""
