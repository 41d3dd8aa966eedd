"""SchedulingGates: pods with scheduling gates wait outside the active queue."""

from secondary_scheduler.plugins.schedulinggates.scheduling_gates import SchedulingGates

__all__ = ["SchedulingGates"]
