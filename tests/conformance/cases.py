"""Random scheduling cases for the conformance test: a seeded generator of snapshots and pods.

Each case is what ``secsched score`` reads (a KubeSchedulerConfiguration, a snapshot with
nodes, bound pods and objects, and a pod to place) and exercises one profile against a small
cluster built to make the plugins disagree if they can: labels with zones and hostnames,
taints, tight capacities with extended resources, unschedulable nodes, images; bound pods with
requests, host ports and (anti-)affinity; an incoming pod with every kind of constraint.

Everything generated is valid as the API server would admit it (upstream's plugins assume
validated objects), and the generator only uses features on which ours is meant to agree:
where it leaves one out, a comment names the issue-12 row and why.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import yaml

from secondary_scheduler.kube.client import JSON
from tests.conformance import dra_cases

ZONES = ("zone-a", "zone-b", "zone-c")
NAMESPACES = ("default", "team-a", "team-b")
NAMESPACE_LABELS = {
    "default": {"env": "prod", "tier": "shared"},
    "team-a": {"env": "prod", "team": "a"},
    "team-b": {"env": "dev", "team": "b"},
}
APPS = ("web", "db", "cache")
IMAGES = (
    ("registry.example/web:1.0", 150 * 1024 * 1024),
    ("registry.example/db:2.1", 600 * 1024 * 1024),
    ("registry.example/cache:7", 40 * 1024 * 1024),
    ("registry.example/tiny:latest", 5 * 1024 * 1024),
    ("registry.example/huge:3", 1800 * 1024 * 1024),
)
GPU = "example.com/gpu"
TAINTS = (
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "gpu", "effect": "NoSchedule"},
    {"key": "maintenance", "value": "true", "effect": "NoExecute"},
    {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
    {"key": "flaky", "effect": "PreferNoSchedule"},
)
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


@dataclass
class Case:
    """One cycle to compare: the inputs of ``secsched score`` and of the harness."""

    index: int
    profile_name: str
    config: str
    """The KubeSchedulerConfiguration both read..."""
    ours_config: str
    """... except where ours needs a switch of its own (``parityMode``)."""
    snapshot: JSON
    pod: JSON
    features: set[str] = field(default_factory=set)
    """What the case exercises (for the summary's per-feature counts)."""


# --- profiles ------------------------------------------------------------------------------

_HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _profile(body: str = "") -> str:
    return _HEADER + "profiles:\n- schedulerName: conformance\n" + body


PROFILES: dict[str, str] = {
    "default": _profile(),
    "most-allocated": _profile(
        """  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 2}
        - {name: memory, weight: 1}
        - {name: example.com/gpu, weight: 3}
"""
    ),
    "requested-to-capacity": _profile(
        """  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 2}
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 40, score: 8}
          - {utilization: 100, score: 3}
"""
    ),
    "weights": _profile(
        """  plugins:
    score:
      enabled:
      - {name: NodeResourcesBalancedAllocation, weight: 5}
      - {name: InterPodAffinity, weight: 4}
      - {name: TaintToleration, weight: 1}
      - {name: ImageLocality, weight: 3}
      - {name: NodeAffinity, weight: 7}
      - {name: PodTopologySpread, weight: 6}
  pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 5}
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
      - {name: cpu, weight: 1}
      - {name: memory, weight: 1}
      - {name: example.com/gpu, weight: 1}
"""
    ),
    "spread-list": _profile(
        """  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}
      - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
"""
    ),
    "disabled": _profile(
        """  plugins:
    filter:
      disabled:
      - name: TaintToleration
      - name: NodePorts
    score:
      disabled:
      - name: ImageLocality
      - name: NodeResourcesBalancedAllocation
      - name: TaintToleration
  pluginConfig:
  - name: InterPodAffinity
    args: {ignorePreferredTermsOfExistingPods: true}
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/gpu]
"""
    ),
    "added-affinity": _profile(
        """  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: disk, operator: Exists}
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 40
          preference:
            matchExpressions:
            - {key: disk, operator: In, values: [ssd]}
  - name: NodeResourcesFit
    args:
      ignoredResourceGroups: [example.com]
      scoringStrategy:
        type: LeastAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
        - {name: example.com/gpu, weight: 5}
"""
    ),
    "multipoint": _profile(
        """  plugins:
    multiPoint:
      enabled:
      - {name: NodeResourcesFit, weight: 4}
      - {name: PodTopologySpread, weight: 5}
      - {name: InterPodAffinity, weight: 3}
    score:
      enabled:
      - {name: NodeAffinity, weight: 9}
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
"""
    ),
    "ratio-extended": _profile(
        """  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - {name: cpu, weight: 3}
        - {name: example.com/gpu, weight: 2}
        - {name: ephemeral-storage, weight: 1}
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 10}
          - {utilization: 100, score: 0}
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
      - {name: cpu, weight: 1}
      - {name: ephemeral-storage, weight: 1}
"""
    ),
    "load-aware": _profile(
        """  plugins:
    score:
      enabled:
      - {name: TargetLoadPacking, weight: 3}
      - {name: LoadVariationRiskBalancing, weight: 2}
  pluginConfig:
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
      defaultRequests: {cpu: 1500m}
      defaultRequestsMultiplier: "1.5"
      metricProvider: {type: Prometheus, address: "http://prometheus.invalid:9090"}
  - name: LoadVariationRiskBalancing
    args:
      safeVarianceMargin: 1.5
      safeVarianceSensitivity: 2
      metricProvider: {type: Prometheus, address: "http://prometheus.invalid:9090"}
"""
    ),
    "low-risk": _profile(
        """  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - {name: LowRiskOverCommitment, weight: 2}
      - {name: NodeResourcesFit, weight: 1}
  pluginConfig:
  - name: LowRiskOverCommitment
    args:
      smoothingWindowSize: 5
      riskLimitWeights: {cpu: 0.6, memory: 0.4}
      metricProvider: {type: Prometheus, address: "http://prometheus.invalid:9090"}
"""
    ),
}
# Pods with ResourceClaims (DynamicResources, in the default profile): three names so that they
# come up three times per round of profiles.
PROFILES["dra"] = PROFILES["default"]
PROFILES["dra-more"] = PROFILES["default"]
PROFILES["dra-most-allocated"] = PROFILES["most-allocated"]
DRA = {"dra", "dra-more", "dra-most-allocated"}
TRIMARAN = ("TargetLoadPacking", "LoadVariationRiskBalancing", "LowRiskOverCommitment")


def _with_parity_mode(config: str) -> str:
    """The config with ``parityMode: true`` in every Trimaran plugin's args (ours only: upstream's
    strict decoding refuses the field, and has no other mode)."""
    document = yaml.safe_load(config)
    for profile in document["profiles"]:
        for entry in profile.get("pluginConfig") or ():
            if entry["name"] in TRIMARAN:
                entry["args"]["parityMode"] = True
    return yaml.safe_dump(document, sort_keys=False)


# Ours' Trimaran plugins deliberately differ from upstream where metrics are missing or stale
# (README, "Beyond upstream": estimated from requests instead of scoring 0); `parityMode: true`
# restores upstream exactly. So the plain load-aware profiles get metrics for every node, fresh,
# and the -parity ones (ours with parityMode) also nodes without metrics.
PROFILES["load-aware-parity"] = PROFILES["load-aware"]
PROFILES["low-risk-parity"] = PROFILES["low-risk"]
PARITY = {"load-aware-parity", "low-risk-parity"}
LOAD_AWARE = {"load-aware", "low-risk", *PARITY}


# --- generator -----------------------------------------------------------------------------


class Generator:
    """Cases from one seed: the same seed always gives the same cases."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def profile_for(self, index: int) -> str:
        """Profiles take turns, so every few hundred cases cover each many times."""
        names = sorted(PROFILES)
        return names[index % len(names)]

    def case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}/{index}")
        profile = self.profile_for(index)
        features: set[str] = {f"profile:{profile}"}
        nodes = [self._node(rng, i, features) for i in range(rng.randint(2, 8))]
        pods: list[JSON] = []
        for i in range(rng.randint(0, 14)):
            pods.append(self._bound_pod(rng, i, rng.choice(nodes)["metadata"]["name"], features))
        objects = self._objects(rng, pods, features)
        pod = self._incoming(rng, features)
        if profile in DRA:
            self._dra(rng, nodes, pods, objects, pod, features)
        snapshot: JSON = {"nodes": nodes, "pods": pods, "objects": objects, "now": 1_700_000_000}
        if profile in LOAD_AWARE:
            self._metrics(rng, snapshot, features, every_node=profile not in PARITY)
        config = PROFILES[profile]
        ours_config = _with_parity_mode(config) if profile in PARITY else config
        return Case(index, profile, config, ours_config, snapshot, pod, features)

    # nodes

    def _node(self, rng: random.Random, i: int, features: set[str]) -> JSON:
        name = f"node-{i}"
        labels = {HOSTNAME: name, "kubernetes.io/os": "linux"}
        if rng.random() < 0.85:
            labels[ZONE] = rng.choice(ZONES)
        else:
            features.add("node:no-zone")
        if rng.random() < 0.5:
            labels["disk"] = rng.choice(("ssd", "hdd"))
        if rng.random() < 0.5:
            labels["cores"] = str(rng.choice((2, 4, 8, 16)))
        if rng.random() < 0.3:
            labels["node-role.kubernetes.io/worker"] = ""
        cpu = rng.choice((1, 2, 4, 8, 16, 32))
        memory_gi = rng.choice((2, 4, 8, 16, 32))
        max_pods = rng.choice((3, 5, 110, 110))
        capacity = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": str(max_pods)}
        allocatable = {
            "cpu": f"{cpu * 1000 - rng.choice((0, 100, 250))}m",
            "memory": f"{memory_gi * 1024 - rng.choice((0, 512))}Mi",
            "pods": str(max_pods),
        }
        if rng.random() < 0.4:
            gpus = rng.randint(0, 4)
            capacity[GPU] = allocatable[GPU] = str(gpus)
            features.add("node:extended-resource")
        if rng.random() < 0.3:
            capacity["ephemeral-storage"] = "100Gi"
            allocatable["ephemeral-storage"] = f"{rng.choice((1, 10, 90))}Gi"
        if rng.random() < 0.2:
            capacity["hugepages-2Mi"] = allocatable["hugepages-2Mi"] = f"{rng.choice((0, 64, 512))}Mi"
        spec: JSON = {}
        if rng.random() < 0.25:
            spec["taints"] = rng.sample(TAINTS, rng.randint(1, 2))
            features.add("node:taints")
        if rng.random() < 0.05:
            spec["unschedulable"] = True
            features.add("node:unschedulable")
        status: JSON = {"capacity": capacity, "allocatable": allocatable}
        if rng.random() < 0.5:
            status["images"] = [
                {"names": [image], "sizeBytes": size} for image, size in rng.sample(IMAGES, rng.randint(1, 3))
            ]
            features.add("node:images")
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": status,
        }

    # pods

    def _requests(self, rng: random.Random, scale: float = 1.0) -> JSON:
        requests: JSON = {}
        if rng.random() < 0.85:
            requests["cpu"] = f"{int(rng.choice((50, 100, 250, 500, 1000, 1500, 3000)) * scale)}m"
        if rng.random() < 0.85:
            requests["memory"] = f"{int(rng.choice((64, 128, 512, 1024, 2048, 6144)) * scale)}Mi"
        if rng.random() < 0.1:
            requests["ephemeral-storage"] = f"{rng.choice((1, 5, 20))}Gi"
        return requests

    def _container(self, rng: random.Random, name: str, features: set[str], scale: float = 1.0) -> JSON:
        container: JSON = {"name": name, "image": rng.choice(IMAGES)[0]}
        requests = self._requests(rng, scale)
        limits: JSON = {}
        if rng.random() < (0.15 if scale >= 1 else 0.08):
            gpus = str(rng.randint(1, 2))
            requests[GPU] = limits[GPU] = gpus  # extended resources: limits required, equal to requests
            features.add("pod:extended-resource")
        if rng.random() < 0.3 and "cpu" in requests:
            limits["cpu"] = requests["cpu"]
        resources: JSON = {}
        if requests:
            resources["requests"] = requests
        if limits:
            resources["limits"] = limits
        if resources:
            container["resources"] = resources
        return container

    def _labels(self, rng: random.Random) -> JSON:
        labels = {"app": rng.choice(APPS)}
        if rng.random() < 0.6:
            labels["tier"] = rng.choice(("front", "back"))
        if rng.random() < 0.3:
            labels["version"] = rng.choice(("v1", "v2"))
        return labels

    def _selector(self, rng: random.Random) -> JSON:
        roll = rng.random()
        if roll < 0.5:
            return {"matchLabels": {"app": rng.choice(APPS)}}
        if roll < 0.8:
            return {"matchExpressions": [{"key": "app", "operator": "In", "values": rng.sample(APPS, 2)}]}
        if roll < 0.9:
            return {"matchExpressions": [{"key": "tier", "operator": rng.choice(("Exists", "DoesNotExist"))}]}
        return {
            "matchLabels": {"tier": rng.choice(("front", "back"))},
            "matchExpressions": [{"key": "app", "operator": "NotIn", "values": [rng.choice(APPS)]}],
        }

    def _pod_term(self, rng: random.Random, features: set[str]) -> JSON:
        term: JSON = {"labelSelector": self._selector(rng), "topologyKey": rng.choice((HOSTNAME, ZONE, ZONE))}
        roll = rng.random()
        if roll < 0.2:
            term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
            features.add("term:namespaces")
        elif roll < 0.3:
            term["namespaceSelector"] = {}  # every namespace
            features.add("term:all-namespaces")
        elif roll < 0.45:
            term["namespaceSelector"] = {
                "matchLabels": {"kubernetes.io/metadata.name": rng.choice(NAMESPACES)}
            }
            features.add("term:namespace-selector")
        elif roll < 0.55:
            # Issue 12 row 2 (namespaceSelector on other namespace labels) is fixed: generated.
            term["namespaceSelector"] = {"matchLabels": {"env": rng.choice(("prod", "dev"))}}
            features.add("term:namespace-selector-labels")
        if rng.random() < 0.05:
            # The API server merges these into labelSelector when it admits the pod; the
            # scheduler itself reads only labelSelector, so both must ignore them here.
            term["matchLabelKeys" if rng.random() < 0.5 else "mismatchLabelKeys"] = ["version"]
            features.add("term:matchLabelKeys")
        return term

    def _affinity(self, rng: random.Random, features: set[str], incoming: bool) -> JSON:
        affinity: JSON = {}
        for kind in ("podAffinity", "podAntiAffinity"):
            if rng.random() >= (0.3 if incoming else 0.15):
                continue
            part: JSON = {}
            if rng.random() < 0.5:
                part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                    self._pod_term(rng, features) for _ in range(rng.randint(1, 2))
                ]
                features.add(f"{'pod' if incoming else 'bound'}:{kind}:required")
            if rng.random() < 0.6:
                part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": self._pod_term(rng, features)}
                    for _ in range(rng.randint(1, 2))
                ]
                features.add(f"{'pod' if incoming else 'bound'}:{kind}:preferred")
            if part:
                affinity[kind] = part
        return affinity

    def _host_ports(self, rng: random.Random, container: JSON, features: set[str]) -> None:
        if rng.random() < 0.15:
            port: JSON = {
                "containerPort": rng.choice((80, 443, 8080)),
                "hostPort": rng.choice((80, 443, 8080)),
            }
            if rng.random() < 0.3:
                port["protocol"] = rng.choice(("TCP", "UDP"))
            if rng.random() < 0.2:
                port["hostIP"] = rng.choice(("0.0.0.0", "10.0.0.1", "10.0.0.2"))
            container["ports"] = [port]
            features.add("hostPort")

    def _bound_pod(self, rng: random.Random, i: int, node: str, features: set[str]) -> JSON:
        namespace = rng.choice(NAMESPACES)
        labels = self._labels(rng)
        container = self._container(rng, "main", features)
        self._host_ports(rng, container, features)
        spec: JSON = {"nodeName": node, "containers": [container]}
        if rng.random() < 0.15:
            spec["initContainers"] = [self._container(rng, "init", features, scale=2.0)]
            if rng.random() < 0.4:
                spec["initContainers"][0]["restartPolicy"] = "Always"  # a sidecar
                features.add("bound:sidecar")
        affinity = self._affinity(rng, features, incoming=False)
        if affinity:
            spec["affinity"] = affinity
        metadata: JSON = {
            "name": f"bound-{i}",
            "namespace": namespace,
            "labels": labels,
            "uid": f"uid-bound-{i}",
        }
        if rng.random() < 0.3:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{labels['app']}-rs",
                    "uid": f"uid-rs-{namespace}-{labels['app']}",
                    "controller": True,
                }
            ]
        if rng.random() < 0.05:
            # Terminating: still on its node, but no longer counted by topology spreading.
            metadata["deletionTimestamp"] = "2023-11-14T22:10:00Z"
            metadata["deletionGracePeriodSeconds"] = 30
            features.add("bound:terminating")
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": {"phase": "Running"},
        }

    def _objects(self, rng: random.Random, pods: list[JSON], features: set[str]) -> list[JSON]:
        objects: list[JSON] = [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
            }
            for name, labels in NAMESPACE_LABELS.items()
        ]
        # Services, ReplicaSets and StatefulSets select pods for PodTopologySpread's default
        # constraints (issue 12 row 1, fixed: generated).
        for namespace in NAMESPACES:
            for app in APPS:
                if rng.random() < 0.15:
                    objects.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Service",
                            "metadata": {"name": f"{app}-svc", "namespace": namespace},
                            "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
                        }
                    )
                    features.add("object:service")
                if rng.random() < 0.15:
                    objects.append(
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "metadata": {
                                "name": f"{app}-rs",
                                "namespace": namespace,
                                "uid": f"uid-rs-{namespace}-{app}",
                            },
                            "spec": {
                                "replicas": 3,
                                "selector": {"matchLabels": {"app": app}},
                                "template": {
                                    "metadata": {"labels": {"app": app}},
                                    "spec": {
                                        "containers": [{"name": "main", "image": "registry.example/web:1.0"}]
                                    },
                                },
                            },
                        }
                    )
                    features.add("object:replicaset")
                if rng.random() < 0.05:
                    objects.append(
                        {
                            "apiVersion": "apps/v1",
                            "kind": "StatefulSet",
                            "metadata": {"name": f"{app}-sts", "namespace": namespace},
                            "spec": {
                                "serviceName": f"{app}-svc",
                                "selector": {"matchLabels": {"app": app}},
                                "template": {
                                    "metadata": {"labels": {"app": app}},
                                    "spec": {
                                        "containers": [{"name": "main", "image": "registry.example/db:2.1"}]
                                    },
                                },
                            },
                        }
                    )
                    features.add("object:statefulset")
        return objects

    # the pod to place

    def _node_requirement(self, rng: random.Random) -> JSON:
        roll = rng.random()
        if roll < 0.3:
            return {
                "key": ZONE,
                "operator": rng.choice(("In", "NotIn")),
                "values": rng.sample(ZONES, rng.randint(1, 2)),
            }
        if roll < 0.5:
            return {
                "key": "disk",
                "operator": rng.choice(("In", "NotIn")),
                "values": [rng.choice(("ssd", "hdd"))],
            }
        if roll < 0.65:
            return {"key": "disk", "operator": rng.choice(("Exists", "DoesNotExist"))}
        if roll < 0.85:
            return {
                "key": "cores",
                "operator": rng.choice(("Gt", "Lt")),
                "values": [str(rng.choice((1, 3, 6, 12)))],
            }
        return {"key": "node-role.kubernetes.io/worker", "operator": "Exists"}

    def _node_term(self, rng: random.Random, features: set[str], preferred: bool) -> JSON:
        term: JSON = {}
        if rng.random() < 0.85:
            term["matchExpressions"] = [self._node_requirement(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.2 or not term:
            # The API admits exactly one value for a metadata.name field selector. With `In` in
            # every required term, NodeAffinity's PreFilter narrows the nodes (PreFilterResult):
            # the framework filters only those and reports the others as "node(s) didn't
            # satisfy plugin(s) [NodeAffinity]"; names of nodes that do not exist are ignored.
            operator = rng.choice(("In", "In", "NotIn"))
            term["matchFields"] = [
                {"key": "metadata.name", "operator": operator, "values": [f"node-{rng.randint(0, 9)}"]}
            ]
            features.add(f"pod:matchFields:{operator}")
        return term

    def _pinned(self, rng: random.Random, features: set[str]) -> JSON:
        """Required node affinity naming nodes, the way a DaemonSet pins its pods (one term of one
        name), or several terms of names, some conflicting within a term (rejected at PreFilter)."""
        roll = rng.random()
        if roll < 0.6:
            terms = [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [f"node-{rng.randint(0, 9)}"]}
                    ]
                }
            ]
            features.add("pod:pinned:daemonset")
        elif roll < 0.85:
            terms = [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [f"node-{rng.randint(0, 9)}"]}
                    ]
                }
                for _ in range(rng.randint(2, 3))
            ]
            if rng.random() < 0.5:
                terms[0]["matchExpressions"] = [self._node_requirement(rng)]
            features.add("pod:pinned:several")
        else:
            first, second = rng.sample(range(8), 2)
            terms = [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [f"node-{first}"]},
                        {"key": "metadata.name", "operator": "In", "values": [f"node-{second}"]},
                    ]
                }
            ]
            features.add("pod:pinned:conflict")
        return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}

    def _tolerations(self, rng: random.Random, features: set[str]) -> list[JSON]:
        tolerations: list[JSON] = []
        for taint in rng.sample(TAINTS, rng.randint(1, 3)):
            roll = rng.random()
            toleration: JSON = {"key": taint["key"]}
            if roll < 0.4 and "value" in taint:
                toleration |= {"operator": "Equal", "value": taint["value"]}
            elif roll < 0.5 and "value" in taint:
                toleration |= {"operator": "Equal", "value": "other"}
            else:
                toleration["operator"] = "Exists"
            if rng.random() < 0.5:
                toleration["effect"] = taint["effect"] if rng.random() < 0.8 else "NoSchedule"
            if toleration.get("effect") == "NoExecute" and rng.random() < 0.5:
                toleration["tolerationSeconds"] = 300
            tolerations.append(toleration)
        if rng.random() < 0.1:
            tolerations.append({"operator": "Exists"})  # tolerates everything
        if rng.random() < 0.1:
            # NodeUnschedulable lets a pod tolerating this taint onto a cordoned node.
            tolerations.append(
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
            )
            features.add("pod:tolerates-unschedulable")
        features.add("pod:tolerations")
        return tolerations

    def _spread(self, rng: random.Random, labels: JSON, features: set[str]) -> JSON:
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        constraint: JSON = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": rng.choice((ZONE, ZONE, HOSTNAME)),
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": labels["app"]}}
            if rng.random() < 0.7
            else self._selector(rng),
        }
        if when == "DoNotSchedule" and rng.random() < 0.3:
            constraint["minDomains"] = rng.randint(1, 4)
            features.add("spread:minDomains")
        if rng.random() < 0.3:
            constraint["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
            features.add("spread:nodeAffinityPolicy")
        if rng.random() < 0.3:
            constraint["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
            features.add("spread:nodeTaintsPolicy")
        if rng.random() < 0.2:
            constraint["matchLabelKeys"] = [rng.choice(("tier", "version"))]
            features.add("spread:matchLabelKeys")
        features.add(f"spread:{when}")
        return constraint

    def _incoming(self, rng: random.Random, features: set[str]) -> JSON:
        namespace = rng.choice(NAMESPACES)
        labels = self._labels(rng)
        containers = [self._container(rng, f"c{i}", features, scale=0.5) for i in range(rng.randint(1, 2))]
        self._host_ports(rng, containers[0], features)
        spec: JSON = {"containers": containers, "schedulerName": "conformance"}
        if rng.random() < 0.2:
            spec["initContainers"] = [self._container(rng, "init", features, scale=1.5)]
            features.add("pod:initContainers")
            if rng.random() < 0.4:
                spec["initContainers"][0]["restartPolicy"] = "Always"
                features.add("pod:sidecar")
        if rng.random() < 0.1:
            spec["overhead"] = {"cpu": "100m", "memory": "64Mi"}
            features.add("pod:overhead")
        if rng.random() < 0.15:
            selector = {}
            if rng.random() < 0.6:
                selector[ZONE] = rng.choice(ZONES)
            if rng.random() < 0.3 or not selector:
                selector["disk"] = rng.choice(("ssd", "hdd"))
            spec["nodeSelector"] = selector
            features.add("pod:nodeSelector")
        node_affinity: JSON = {}
        if rng.random() < 0.2:
            node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [self._node_term(rng, features, False) for _ in range(rng.randint(1, 2))]
            }
            features.add("pod:nodeAffinity:required")
        if rng.random() < 0.3:
            node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "preference": self._node_term(rng, features, True)}
                for _ in range(rng.randint(1, 3))
            ]
            features.add("pod:nodeAffinity:preferred")
        if rng.random() < 0.06:
            node_affinity.update(self._pinned(rng, features))
        affinity = self._affinity(rng, features, incoming=True)
        if node_affinity:
            affinity["nodeAffinity"] = node_affinity
        if affinity:
            spec["affinity"] = affinity
        if rng.random() < 0.45:
            spec["tolerations"] = self._tolerations(rng, features)
        if rng.random() < 0.45:
            spec["topologySpreadConstraints"] = [
                self._spread(rng, labels, features) for _ in range(rng.randint(1, 2))
            ]
            keys = {(c["topologyKey"], c["whenUnsatisfiable"]) for c in spec["topologySpreadConstraints"]}
            if len(keys) < len(spec["topologySpreadConstraints"]):  # the API refuses duplicates
                spec["topologySpreadConstraints"] = spec["topologySpreadConstraints"][:1]
        if rng.random() < 0.03:
            spec["nodeName"] = f"node-{rng.randint(0, 7)}"
            features.add("pod:nodeName")
        if rng.random() < 0.08:
            # Pod-level resources (beta, on in 1.34): cpu, memory and hugepages.
            spec["resources"] = {
                "requests": {"cpu": "4", "memory": "8Gi"},
                "limits": {"cpu": "4", "memory": "8Gi"},
            }
            if rng.random() < 0.5:
                for part in spec["resources"].values():
                    part["hugepages-2Mi"] = rng.choice(("64Mi", "256Mi"))
                features.add("pod:pod-level-hugepages")
            for container in containers:
                container.pop("resources", None)
            features.add("pod:pod-level-resources")
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "incoming", "namespace": namespace, "labels": labels, "uid": "uid-incoming"},
            "spec": spec,
        }

    def _dra(
        self,
        rng: random.Random,
        nodes: list[JSON],
        pods: list[JSON],
        objects: list[JSON],
        pod: JSON,
        features: set[str],
    ) -> None:
        """Classes, slices and claims (``dra_cases``), and the pod's claims; most nodes untainted and
        most pods without pod (anti-)affinity or spreading, so that DynamicResources decides."""
        for node in nodes:
            if rng.random() < 0.8:
                node["spec"].pop("taints", None)
                node["spec"].pop("unschedulable", None)
        if rng.random() < 0.7:
            for key in ("affinity", "topologySpreadConstraints", "nodeName", "nodeSelector"):
                pod["spec"].pop(key, None)
        if rng.random() < 0.6:  # devices, not cpu or memory, decide
            for container in pod["spec"]["containers"]:
                container.pop("resources", None)
            pod["spec"].pop("resources", None)
        slices = dra_cases.resource_slices(rng, nodes, features)
        held = dra_cases.held_claims(rng, slices, pods, features)
        _entries, claims = dra_cases.pod_claims(rng, pod, held, features)
        if dra_cases.pool_order_matters(slices, claims):
            features.add(dra_cases.POOL_ORDER_DEPENDENT)
        objects += [*dra_cases.device_classes(), *slices, *held, *claims]

    def _metrics(self, rng: random.Random, snapshot: JSON, features: set[str], every_node: bool) -> None:
        """Load-watcher metrics for every node, or most (a node without any scores the minimum)."""
        end = snapshot["now"] - rng.choice((0, 30, 120))
        node_metrics: JSON = {}
        for node in snapshot["nodes"]:
            if not every_node and rng.random() < 0.15:
                features.add("metrics:missing-node")
                continue
            metrics = []
            for kind, name in (
                ("CPU", "instance:node_cpu:ratio"),
                ("Memory", "instance:node_memory_utilisation:ratio"),
            ):
                average = round(rng.uniform(0, 100), 2)
                metrics.append(
                    {"name": name, "type": kind, "operator": "AVG", "rollup": "15m", "value": average}
                )
                if rng.random() < 0.85:
                    deviation = round(rng.uniform(0, 30), 2)
                    metrics.append(
                        {"name": name, "type": kind, "operator": "STD", "rollup": "15m", "value": deviation}
                    )
            node_metrics[node["metadata"]["name"]] = {"metrics": metrics}
        snapshot["metrics"] = {
            "timestamp": end,
            "window": {"duration": "15m", "start": end - 900, "end": end},
            "source": "Prometheus",
            "data": {"NodeMetricsMap": node_metrics},
        }
        recent = [pod for pod in snapshot["pods"] if rng.random() < 0.25]
        snapshot["recentlyScheduled"] = [
            {
                "pod": f"{pod['metadata']['namespace']}/{pod['metadata']['name']}",
                "timestamp": end + rng.choice((-300, -90, -30, 10, 60)),
            }
            for pod in recent
        ]
        if recent:
            features.add("metrics:recentlyScheduled")
