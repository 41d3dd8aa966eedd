"""InterPodAffinity: required affinity/anti-affinity (both directions), namespaces, and scoring."""

from __future__ import annotations

from typing import Any

from tests.unit.framework.kubeobjects import make_node, make_pod, pod_info, table_of
from tests.unit.plugins.pluginruns import raw_and_normalized, rejections

from secondary_scheduler.framework import Handle
from secondary_scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

AFFINITY = "node(s) didn't match pod affinity rules [unresolvable]"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
HOSTNAME = "kubernetes.io/hostname"


def nodes() -> list[dict[str, Any]]:
    """a, b in zone z1; c in zone z2; d without a zone."""
    zoned = [
        make_node(name, labels={"zone": zone, HOSTNAME: name})
        for name, zone in (("a", "z1"), ("b", "z1"), ("c", "z2"))
    ]
    return [*zoned, make_node("d", labels={HOSTNAME: "d"})]


def term(app: str, key: str = "zone", **fields: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **fields}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    terms = [{"weight": weight, "podAffinityTerm": item} for weight, item in weighted]
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def plugin(**args: Any) -> InterPodAffinity:
    return InterPodAffinity(args, Handle())


def db_on(node: str, namespace: str = "default", **fields: Any) -> dict[str, Any]:
    return make_pod(f"db-{node}", namespace=namespace, node_name=node, labels={"app": "db"}, **fields)


def test_required_affinity_needs_a_selected_pod_in_the_same_domain() -> None:
    pod = pod_info("p", affinity=required("podAffinity", term("db")))
    assert rejections(plugin(), pod, table_of(nodes(), [db_on("a")])) == {"c": [AFFINITY], "d": [AFFINITY]}


def test_the_first_pod_of_a_self_affine_group_may_start_anywhere_labelled() -> None:
    pod = pod_info("p", labels={"app": "web"}, affinity=required("podAffinity", term("web")))
    assert rejections(plugin(), pod, table_of(nodes())) == {"d": [AFFINITY]}


def test_required_anti_affinity_keeps_away_from_selected_pods() -> None:
    pod = pod_info("p", affinity=required("podAntiAffinity", term("db")))
    assert rejections(plugin(), pod, table_of(nodes(), [db_on("a")])) == {
        "a": [ANTI_AFFINITY],
        "b": [ANTI_AFFINITY],
    }


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    loner = db_on("c", affinity=required("podAntiAffinity", term("web")))
    pod = pod_info("p", labels={"app": "web"})
    assert rejections(plugin(), pod, table_of(nodes(), [loner])) == {"c": [EXISTING]}


def test_a_node_reports_affinity_before_anti_affinity() -> None:
    affinity = {**required("podAffinity", term("db")), **required("podAntiAffinity", term("db", HOSTNAME))}
    pod = pod_info("p", affinity=affinity)
    assert rejections(plugin(), pod, table_of(nodes(), [db_on("a")])) == {
        "a": [ANTI_AFFINITY],
        "c": [AFFINITY],
        "d": [AFFINITY],
    }


def test_terms_select_their_own_namespace_by_default() -> None:
    table = table_of(nodes(), [db_on("a", namespace="other")])
    same_namespace = pod_info("p", affinity=required("podAffinity", term("db")))
    assert "a" in rejections(plugin(), same_namespace, table)
    listed = pod_info("p", affinity=required("podAffinity", term("db", namespaces=["other"])))
    assert rejections(plugin(), listed, table) == {"c": [AFFINITY], "d": [AFFINITY]}
    every = pod_info("p", affinity=required("podAffinity", term("db", namespaceSelector={})))
    assert rejections(plugin(), every, table) == {"c": [AFFINITY], "d": [AFFINITY]}
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "other"}}
    named = pod_info("p", affinity=required("podAffinity", term("db", namespaceSelector=by_name)))
    assert rejections(plugin(), named, table) == {"c": [AFFINITY], "d": [AFFINITY]}


def test_namespace_selectors_read_the_namespaces_labels() -> None:
    table = table_of(nodes(), [db_on("a", namespace="team-a"), db_on("c", namespace="team-c")])
    handle = Handle()
    affinity = InterPodAffinity(None, handle)  # asks for the Namespaces informer
    handle.informers.fill(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": f"team-{team}", "labels": {"team": team}},
            }
            for team in "ac"
        ]
    )
    pod = pod_info(
        "p", affinity=required("podAffinity", term("db", namespaceSelector={"matchLabels": {"team": "a"}}))
    )
    assert rejections(affinity, pod, table) == {"c": [AFFINITY], "d": [AFFINITY]}


def test_pods_without_terms_skip_the_filter() -> None:
    assert rejections(plugin(), pod_info("p"), table_of(nodes(), [db_on("a")])) == {}


def test_preferred_terms_score_both_ways_and_normalize_between_min_and_max() -> None:
    cache = make_pod("cache", node_name="c", labels={"app": "cache"})
    affinity = {
        **preferred("podAffinity", (5, term("db"))),
        **preferred("podAntiAffinity", (3, term("cache", HOSTNAME))),
    }
    raw, normalized = raw_and_normalized(
        plugin(), pod_info("p", affinity=affinity), table_of(nodes(), [db_on("a"), cache])
    )
    assert raw == {"a": 5, "b": 5, "c": -3, "d": 0}
    assert normalized == {"a": 100, "b": 100, "c": 0, "d": 37}


def test_existing_pods_required_affinity_attracts_with_the_hard_weight() -> None:
    fan = make_pod("fan", node_name="c", labels={"app": "fan"}, affinity=required("podAffinity", term("web")))
    table = table_of(nodes(), [fan])
    web = pod_info("p", labels={"app": "web"})
    assert raw_and_normalized(plugin(hardPodAffinityWeight=4), web, table)[0] == {
        "a": 0,
        "b": 0,
        "c": 4,
        "d": 0,
    }
    assert raw_and_normalized(plugin(hardPodAffinityWeight=0), web, table) == ({}, {})


def test_existing_pods_preferred_anti_affinity_repels() -> None:
    shy = make_pod("shy", node_name="a", affinity=preferred("podAntiAffinity", (10, term("web"))))
    raw, normalized = raw_and_normalized(
        plugin(), pod_info("p", labels={"app": "web"}), table_of(nodes(), [shy])
    )
    assert raw == {"a": -10, "b": -10, "c": 0, "d": 0}
    assert normalized == {"a": 0, "b": 0, "c": 100, "d": 100}


def test_existing_pods_preferences_can_be_ignored() -> None:
    shy = make_pod("shy", node_name="a", affinity=preferred("podAntiAffinity", (10, term("web"))))
    web = pod_info("p", labels={"app": "web"})
    assert raw_and_normalized(
        plugin(ignorePreferredTermsOfExistingPods=True), web, table_of(nodes(), [shy])
    ) == ({}, {})
