"""KubeSchedulerConfiguration files: load (v1beta1..v1), validate, default, merge, dump.

The scheduler framework needs only `load_config_file` (or `load_config`) and the effective
model it returns: per profile, the plugins of each extension point in order with score
weights, and each enabled plugin's validated args. `plugin_catalog.CATALOG` says which
plugins exist and where each may run.
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
from secondary_scheduler.config.plugin_catalog import CATALOG, PluginSpec

__all__ = [
    "CATALOG",
    "ClientConnection",
    "ConfigError",
    "ExtensionPoint",
    "LeaderElection",
    "LoadResult",
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
