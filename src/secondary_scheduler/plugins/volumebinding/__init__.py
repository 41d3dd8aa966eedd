"""VolumeBinding: claims bound or bindable on the chosen node, and bound before the pod is."""

from secondary_scheduler.plugins.volumebinding.args import VolumeBindingArgs
from secondary_scheduler.plugins.volumebinding.volume_binding import VolumeBinding

__all__ = ["VolumeBinding", "VolumeBindingArgs"]
