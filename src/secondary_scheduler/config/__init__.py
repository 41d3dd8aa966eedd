"""KubeSchedulerConfiguration files: load (v1beta1..v1), validate, default, merge, dump.

The scheduler framework needs only `load_config_file` (or `load_config`) and the effective
model it returns: per profile, the plugins of each extension point in order with score
weights, and each enabled plugin's validated args. The caller hands the loader a
`PluginCatalog` saying which plugins exist and where each may run: this package imports
no plugin.
"""

from secondary_scheduler.config.dump import dump_config, dump_config_yaml
from secondary_scheduler.config.errors import ConfigError, Problem
from secondary_scheduler.config.loader import LoadResult, load_config, load_config_file
from secondary_scheduler.config.model import (
    ClientConnection,
    ExtensionPoint,
    LeaderElection,
    PluginEntry,
    Profile,
    SchedulerConfiguration,
)
from secondary_scheduler.config.plugin_catalog import PluginCatalog, PluginSpec

__all__ = [
    "ClientConnection",
    "ConfigError",
    "ExtensionPoint",
    "LeaderElection",
    "LoadResult",
    "PluginCatalog",
    "PluginEntry",
    "PluginSpec",
    "Problem",
    "Profile",
    "SchedulerConfiguration",
    "dump_config",
    "dump_config_yaml",
    "load_config",
    "load_config_file",
]
