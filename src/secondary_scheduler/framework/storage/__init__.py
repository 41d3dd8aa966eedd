"""What the volume plugins share about storage, apart from any one plugin (issue 40).

kube-scheduler's volume plugins (VolumeBinding, NodeVolumeLimits, VolumeRestrictions,
VolumeZone) read claims, volumes and classes through shared libraries, not through each
other: component-helpers' storage/volume (``volumes``) and csi-translation-lib
(``csitranslation``). Here too, so that no plugin folder imports another.
"""
