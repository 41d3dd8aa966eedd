"""In-tree volume plugins seen as the CSI drivers that replaced them (csi-translation-lib).

A cluster that migrated, say, AWS EBS to its CSI driver still has PVs and inline volumes
written for the in-tree plugin (``awsElasticBlockStore``). kube-scheduler counts those
against the CSI driver's volume limit (NodeVolumeLimits) and reads their zone as the CSI
driver's topology (VolumeBinding), once the node says the plugin migrated. This module
gives the same answers: the plugin of a volume source, its CSI driver name, the CSI volume
handle (so one disk used through both spellings counts once), and the node affinity with
the CSI topology key. Written after csi-translation-lib v0.34 (k8s.io/csi-translation-lib).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
"""On a CSINode: the in-tree plugins whose volumes the node's CSI drivers serve."""

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
MULTI_ZONE_DELIMITER = "__"

AWS_EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
AZURE_DISK = "kubernetes.io/azure-disk"
AZURE_FILE = "kubernetes.io/azure-file"
CINDER = "kubernetes.io/cinder"
VSPHERE = "kubernetes.io/vsphere-volume"
PORTWORX = "kubernetes.io/portworx-volume"


class TranslationError(Exception):
    """A volume the CSI translation refuses (an odd EBS ID, GCE zones of two regions...)."""


@dataclass(frozen=True)
class InTreePlugin:
    name: str
    """The in-tree plugin name (``kubernetes.io/aws-ebs``), also a StorageClass provisioner."""
    driver: str
    """The CSI driver that replaced it."""
    source: str
    """The volume source field it reads in a PV spec and in a pod volume."""
    topology_key: str | None
    """The CSI driver's zone key, which a translated PV's node affinity uses."""


PLUGINS: tuple[InTreePlugin, ...] = (
    InTreePlugin(AWS_EBS, "ebs.csi.aws.com", "awsElasticBlockStore", "topology.ebs.csi.aws.com/zone"),
    InTreePlugin(GCE_PD, "pd.csi.storage.gke.io", "gcePersistentDisk", "topology.gke.io/zone"),
    InTreePlugin(AZURE_DISK, "disk.csi.azure.com", "azureDisk", None),
    InTreePlugin(AZURE_FILE, "file.csi.azure.com", "azureFile", None),
    InTreePlugin(CINDER, "cinder.csi.openstack.org", "cinder", "topology.cinder.csi.openstack.org/zone"),
    InTreePlugin(VSPHERE, "csi.vsphere.vmware.com", "vsphereVolume", None),
    InTreePlugin(PORTWORX, "pxd.portworx.com", "portworxVolume", None),
)
BY_NAME: Mapping[str, InTreePlugin] = {plugin.name: plugin for plugin in PLUGINS}

_ALWAYS_MIGRATED = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER})
"""Plugins whose migration is on for good in 1.34 (their feature gates are locked on)."""
_MIGRATION_GATED = frozenset({PORTWORX})
"""CSIMigrationPortworx: GA and locked on in 1.34, but still checked against the node (only
Portworx: ``limits_migration_class`` relies on it)."""

_EBS_VOLUME_ID = re.compile(r"^vol-[^/]*$")
_GCE_ZONAL = "projects/{}/zones/{}/disks/{}"
_GCE_REGIONAL = "projects/{}/regions/{}/disks/{}"
_UNSPECIFIED = "UNSPECIFIED"


def plugin_of_pv(volume: KubeObject) -> InTreePlugin | None:
    """The in-tree plugin a PV is written for (IsPVMigratable/GetInTreePluginNameFromSpec)."""
    spec = volume.get("spec") or {}
    return next((plugin for plugin in PLUGINS if spec.get(plugin.source) is not None), None)


def plugin_of_inline(volume: Mapping[str, Any]) -> InTreePlugin | None:
    """The in-tree plugin of a pod's inline volume (IsInlineMigratable)."""
    return next((plugin for plugin in PLUGINS if volume.get(plugin.source) is not None), None)


def _migrated_plugins(csi_node: KubeObject | None) -> set[str]:
    annotations = ((csi_node or {}).get("metadata") or {}).get("annotations") or {}
    value = annotations.get(MIGRATED_PLUGINS_ANNOTATION) or ""
    return set(value.split(",")) if value else set()


def migrated_on_node(plugin: str, csi_node: KubeObject | None) -> bool:
    """VolumeBinding's test: migration is on for the plugin and the node's CSINode lists it."""
    if plugin not in _ALWAYS_MIGRATED and plugin not in _MIGRATION_GATED:
        return False
    return csi_node is not None and plugin in _migrated_plugins(csi_node)


NO_CSI_NODE = 0
"""A node's limits migration class (``limits_migration_class``): the node has no CSINode."""
CSI_NODE = 1
"""The node has a CSINode that does not list Portworx as migrated."""
CSI_NODE_PORTWORX = 2
"""The node has a CSINode listing Portworx (the only gated plugin) as migrated."""


def limits_migration_class(csi_node: KubeObject | None) -> int:
    """All that NodeVolumeLimits' migration test reads of a CSINode, as one of three classes.

    Nodes of one class count every pod's volumes alike, so a pod's volumes are worked out
    once per class instead of once per node.
    """
    if csi_node is None:
        return NO_CSI_NODE
    return CSI_NODE_PORTWORX if PORTWORX in _migrated_plugins(csi_node) else CSI_NODE


def migration_on_in_class(plugin: str, node_class: int) -> bool:
    """NodeVolumeLimits' test (its isCSIMigrationOn) on a node of ``node_class``.

    Upstream returns early for the plugins whose migration is locked on, without reading
    the node's annotation; only Portworx is checked against it.
    """
    if node_class == NO_CSI_NODE or not plugin:
        return False
    if plugin in _ALWAYS_MIGRATED:
        return True
    if plugin in _MIGRATION_GATED:
        return node_class == CSI_NODE_PORTWORX
    return False


def _ebs_volume_id(kubernetes_id: str) -> str:
    """``aws://zone/vol-123`` or ``vol-123`` -> ``vol-123`` (KubernetesVolumeIDToEBSVolumeID)."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    aws_id = kubernetes_id[len("aws://") :].partition("/")[2].strip("/")
    if not _EBS_VOLUME_ID.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def _check_azure_kind(source: Mapping[str, Any]) -> None:
    kind = source.get("kind")
    if kind is not None and str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


def pv_volume_handle(plugin: InTreePlugin, volume: KubeObject) -> str:
    """The CSI volume handle of an in-tree PV (TranslateInTreePVToCSI's VolumeHandle)."""
    source = (volume.get("spec") or {}).get(plugin.source) or {}
    if plugin.name == AWS_EBS:
        return _ebs_volume_id(str(source.get("volumeID", "")))
    if plugin.name == GCE_PD:
        labels = (volume.get("metadata") or {}).get("labels") or {}
        zones_label = labels.get(BETA_ZONE_LABEL) or labels.get(ZONE_LABEL) or ""
        zones = zones_label.split(MULTI_ZONE_DELIMITER)
        pd_name = str(source.get("pdName", ""))
        if len(zones) == 1 and zones[0]:
            return _GCE_ZONAL.format(_UNSPECIFIED, zones[0], pd_name)
        if len(zones) > 1:
            return _GCE_REGIONAL.format(_UNSPECIFIED, _gce_region(zones), pd_name)
        return _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, pd_name)
    if plugin.name == AZURE_DISK:
        _check_azure_kind(source)
        return str(source.get("diskURI", ""))
    if plugin.name in (CINDER, PORTWORX):
        return str(source.get("volumeID", ""))
    raise TranslationError(f"CSI migration of {plugin.name} volumes is not supported")


def inline_volume_handle(plugin: InTreePlugin, volume: Mapping[str, Any]) -> str:
    """The CSI volume handle of a pod's inline in-tree volume (TranslateInTreeInlineVolumeToCSI)."""
    source = volume.get(plugin.source) or {}
    if plugin.name == AWS_EBS:
        return _ebs_volume_id(str(source.get("volumeID", "")))
    if plugin.name == GCE_PD:
        return _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, str(source.get("pdName", "")))
    if plugin.name == AZURE_DISK:
        _check_azure_kind(source)
        return str(source.get("diskURI", ""))
    if plugin.name in (CINDER, PORTWORX):
        return str(source.get("volumeID", ""))
    raise TranslationError(f"CSI migration of inline {plugin.name} volumes is not supported")


def _terms(volume: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = (volume.get("spec") or {}).get("nodeAffinity") or {}
    return list((affinity.get("required") or {}).get("nodeSelectorTerms") or [])


def _has_key(terms: list[dict[str, Any]], key: str) -> bool:
    return any(item.get("key") == key for term in terms for item in term.get("matchExpressions") or ())


def _zone_and_region_labels(volume: dict[str, Any]) -> tuple[str, str]:
    """getTopologyLabel: which zone label family the PV uses (GA unless only beta is there)."""
    terms = _terms(volume)
    labels = (volume.get("metadata") or {}).get("labels") or {}
    if _has_key(terms, ZONE_LABEL):
        return ZONE_LABEL, REGION_LABEL
    if _has_key(terms, BETA_ZONE_LABEL):
        return BETA_ZONE_LABEL, BETA_REGION_LABEL
    if ZONE_LABEL in labels:
        return ZONE_LABEL, REGION_LABEL
    if BETA_ZONE_LABEL in labels:
        return BETA_ZONE_LABEL, BETA_REGION_LABEL
    return ZONE_LABEL, REGION_LABEL


def _rename_key(terms: list[dict[str, Any]], old: str, new: str) -> None:
    for term in terms:
        for item in term.get("matchExpressions") or ():
            if item.get("key") == old:
                item["key"] = new


def translate_pv_topology(volume: KubeObject) -> dict[str, Any]:
    """A copy of an in-tree PV whose node affinity uses the CSI driver's topology key.

    translateTopologyFromInTreeToCSI: zone requirements are renamed to the CSI key (or,
    without any, added from the PV's zone label); beta region requirements become GA.
    Plugins without a CSI topology key (Azure Disk, Portworx) keep their node affinity.
    """
    clone: dict[str, Any] = copy.deepcopy(dict(volume))
    plugin = plugin_of_pv(clone)
    if plugin is None or plugin.topology_key is None:
        return clone
    zone_label, region_label = _zone_and_region_labels(clone)
    terms = _terms(clone)
    if _has_key(terms, zone_label):
        _rename_key(terms, zone_label, plugin.topology_key)
    else:
        label = ((clone.get("metadata") or {}).get("labels") or {}).get(zone_label)
        if label is not None:
            zones = sorted({zone.strip() for zone in label.split(MULTI_ZONE_DELIMITER) if zone.strip()})
            if zones:
                _add_topology(clone, plugin.topology_key, zones)
    if region_label == BETA_REGION_LABEL:
        _rename_key(_terms(clone), BETA_REGION_LABEL, REGION_LABEL)
    return clone


def _add_topology(volume: dict[str, Any], key: str, zones: list[str]) -> None:
    spec = volume.setdefault("spec", {})
    affinity = spec.get("nodeAffinity") or {}
    required = affinity.get("required") or {}
    terms = required.get("nodeSelectorTerms") or [{}]
    requirement = {"key": key, "operator": "In", "values": zones}
    for term in terms:
        term["matchExpressions"] = [*(term.get("matchExpressions") or []), dict(requirement)]
    required["nodeSelectorTerms"] = terms
    affinity["required"] = required
    spec["nodeAffinity"] = affinity
