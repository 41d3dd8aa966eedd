"""The in-tree catalog (what the operator checks ConfigMaps with) says what the plugin classes say.

``plugins.catalog`` states each in-tree plugin's extension points, args model and warning
without importing the plugin; the registry computes the same from the classes. They must
never disagree, or the operator would accept a config the scheduler refuses (or the reverse).
"""

from __future__ import annotations

from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import IN_TREE, catalog_of, in_tree_registry, load_registry


def test_the_in_tree_catalog_is_what_the_plugin_classes_say() -> None:
    from_classes = catalog_of(in_tree_registry())
    assert list(IN_TREE_CATALOG) == [plugin.name for plugin in IN_TREE], (
        "add the plugin to plugins/catalog.py too, in registry.IN_TREE's order"
    )
    assert dict(IN_TREE_CATALOG) == dict(from_classes)


def test_each_command_builds_its_own_registry() -> None:
    """No process-wide state: a --plugin class joins one registry, not the next one built."""
    with_flag = load_registry(["secsched_example_plugins:AvoidNodeLabel"])
    assert with_flag["AvoidNodeLabel"].__module__ == "secsched_example_plugins.avoidlabel"
    assert catalog_of(with_flag)["AvoidNodeLabel"].args_model is with_flag["AvoidNodeLabel"].args_model
    assert "AvoidNodeLabel" not in in_tree_registry()
