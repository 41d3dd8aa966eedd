"""A plugin module whose own import fails, as one with a missing dependency does."""

from __future__ import annotations

import secsched_dependency_that_is_not_installed  # noqa: F401

from secondary_scheduler.pluginapi import ScorePlugin


class NeedsMissingPackage(ScorePlugin):
    name = "NeedsMissingPackage"
