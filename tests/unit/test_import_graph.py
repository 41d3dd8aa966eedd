"""The package's import graph, read from the source (ast: nothing is imported or run).

What it guards (issues 16 and 40): no import cycle between the package's parts; the
framework knows no plugin; the config loader imports no plugin, not even lazily (each
command hands it a plugin catalog); the scheduling loop and ``secsched score`` reach
plugins only through the registry; the public plugin API depends on no plugin; the
operator checks a ConfigMap without loading plugin code or numpy; what the scheduler
and the operator run never loads the dev tooling (matplotlib, httpx, and the local cluster
and the demo, a package of their own: devtools/, ``secsched_devtools``), which no module
of the runtime package imports: the CLI names its two commands and imports them by name
when they run; and bench/ takes from the demo only the workload it replays.

Every import counts, including those inside functions (they run when the function does),
except those under ``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

import secondary_scheduler
from secondary_scheduler.cli.main import COMMANDS, DEVTOOLS_PACKAGE
from secsched_devtools import importgraph
from secsched_devtools.importgraph import module_files

PACKAGE = "secondary_scheduler"
ROOT = Path(secondary_scheduler.__file__).resolve().parent
PLUGINS = f"{PACKAGE}.plugins"
REGISTRY = f"{PACKAGE}.plugins.registry"
CATALOG = f"{PACKAGE}.plugins.catalog"
DEV_TOOLING = ("matplotlib", "httpx", DEVTOOLS_PACKAGE)
BENCH = ROOT.parents[1] / "bench"


MODULES = module_files(ROOT)


@cache
def imports_of(module: str) -> tuple[str, ...]:
    """The modules ``module`` imports (``from a import b`` is ``a.b`` when that is a module of ours),
    those inside functions included (they run when the function is called)."""
    return tuple(importgraph.imports_of(module, MODULES[module], MODULES))


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def modules_under(package: str) -> list[str]:
    return [module for module in MODULES if under(module, package)]


def reachable(start: Iterable[str]) -> dict[str, str | None]:
    """Every module importing ``start`` and running its code may load (parent packages included)
    -> who imported it."""
    parents: dict[str, str | None] = dict.fromkeys(start)
    todo = list(parents)
    while todo:
        module = todo.pop()
        if module not in MODULES:
            continue  # a third-party or standard module: we do not follow its imports
        imported = list(imports_of(module))
        parent = module.rpartition(".")[0]
        while parent:
            imported.append(parent)  # importing a.b.c runs a/__init__ and a/b/__init__ first
            parent = parent.rpartition(".")[0]
        for name in imported:
            if name not in parents:
                parents[name] = module
                todo.append(name)
    return parents


def chain(parents: dict[str, str | None], module: str) -> str:
    links = [module]
    while (parent := parents[links[-1]]) is not None:
        links.append(parent)
    return " -> ".join(reversed(links))


def offending(modules: Iterable[str], rule: str, forbidden: Iterable[str]) -> list[str]:
    """``module imports name (rule)`` for each import of ``modules`` that is ``forbidden``."""
    banned = set(forbidden)
    return [
        f"{module} imports {name} ({rule})"
        for module in modules
        for name in imports_of(module)
        if name in banned
    ]


def part(module: str) -> str:
    """The part of the package ``module`` belongs to: its sub-package (config, framework, ...) or,
    for a module at the top (pluginapi, apivalidation, ...), the module itself."""
    return module.split(".")[1]


def edges_between_parts() -> dict[tuple[str, str], list[str]]:
    """(importing part, imported part) -> the module imports that make the edge (deferred ones too)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module in MODULES:
        if module == PACKAGE:
            continue
        for name in imports_of(module):
            if under(name, PACKAGE) and name != PACKAGE and part(name) != part(module):
                edges[(part(module), part(name))].append(f"{module} -> {name}")
    return edges


def edges_in_cycles(edges: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges ``a -> b`` from which ``a`` can be reached again (each lies on a cycle)."""
    edges = set(edges)
    following: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        following[source].add(target)

    def reaches(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for target in following[todo.pop()] - seen:
                seen.add(target)
                todo.append(target)
        return seen

    return {(source, target) for source, target in edges if source in reaches(target)}


def test_no_import_cycle_between_the_packages_parts() -> None:
    """config, framework, plugins, scheduler, kube, cli, operator, ... and the top-level modules
    form a layered graph: an import that closes a loop fails here with the imports that make it."""
    edges = edges_between_parts()
    cycles = edges_in_cycles(edges)
    assert {f"{a} -> {b}": sorted(set(edges[(a, b)])) for a, b in sorted(cycles)} == {}


def test_the_cycle_check_finds_a_cycle() -> None:
    """Guards the guard: a loop of three parts is found, edge by edge; a branch off it is not."""
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
    assert edges_in_cycles(edges) == {("a", "b"), ("b", "c"), ("c", "a")}
    assert ("config", "kube") in edges_between_parts()


def test_the_config_loader_imports_no_plugin() -> None:
    """Not even inside a function: the caller hands the loader a PluginCatalog (issue 40)."""
    config = modules_under(f"{PACKAGE}.config")
    assert offending(config, "the loader is handed a catalog", modules_under(PLUGINS)) == []
    loaded = reachable(config)
    assert [chain(loaded, module) for module in loaded if under(module, PLUGINS)] == []


@pytest.mark.parametrize("check", [CATALOG, f"{PACKAGE}.operator.configcheck"])
def test_the_in_tree_catalog_loads_no_plugin_code(check: str) -> None:
    """What the operator's ConfigMap check loads: the plugins' args models (``args.py``) and
    the catalog, never the plugins, the framework or numpy (kube-scheduler's apis/config)."""
    loaded = reachable([check])
    config_side = {CATALOG, f"{PLUGINS}.dynamicresources.limitation"}
    plugin_code = [
        module
        for module in loaded
        if under(module, PLUGINS)
        and module not in config_side
        and module.rpartition(".")[2] != "args"
        and not MODULES.get(module, (None, False))[1]  # a plugin package's __init__ imports nothing
    ]
    heavy = [module for module in loaded if under(module, "numpy") or under(module, f"{PACKAGE}.framework")]
    assert [chain(loaded, module) for module in plugin_code + heavy] == []


def test_the_operator_loads_no_plugin_code() -> None:
    """`secsched operator` (its command and everything it runs): no numpy, no framework."""
    loaded = reachable(
        [f"{PACKAGE}.cli.main", *modules_under(f"{PACKAGE}.operator"), f"{PACKAGE}.cli.operator_cmd"]
    )
    heavy = [module for module in loaded if under(module, "numpy") or under(module, f"{PACKAGE}.framework")]
    assert [chain(loaded, module) for module in heavy] == []


def test_the_framework_imports_no_plugin() -> None:
    framework = modules_under(f"{PACKAGE}.framework")
    assert offending(framework, "the framework knows no plugin", modules_under(PLUGINS)) == []


def test_the_scheduling_loop_and_score_reach_plugins_only_through_the_registry() -> None:
    named = [module for module in modules_under(PLUGINS) if module != REGISTRY]
    loop = [*modules_under(f"{PACKAGE}.scheduler"), f"{PACKAGE}.cli.score_run"]
    assert offending(loop, "name no plugin: use plugins.registry", named) == []


def test_the_plugin_api_imports_no_plugin() -> None:
    """Not directly, and nothing it loads does, even inside a function (a plugin importing it
    creates no cycle)."""
    api = f"{PACKAGE}.pluginapi"
    assert offending([api], "the API depends on no plugin", modules_under(PLUGINS)) == []
    loaded = reachable([api])
    assert [chain(loaded, module) for module in loaded if under(module, PLUGINS)] == []


@pytest.mark.parametrize(
    "runtime",
    [f"{PACKAGE}.scheduler", f"{PACKAGE}.operator", f"{PACKAGE}.pluginapi", f"{PACKAGE}.plugins"],
)
def test_the_runtime_loads_no_dev_tooling(runtime: str) -> None:
    everything = reachable(modules_under(runtime))
    loaded = [module for module in everything if any(under(module, tool) for tool in DEV_TOOLING)]
    assert [chain(everything, module) for module in loaded] == []


@pytest.mark.parametrize("command", ["scheduler", "operator"])
def test_a_runtime_command_loads_no_dev_tooling(command: str) -> None:
    """`secsched scheduler` (the image's entry point) and `secsched operator`: the CLI's root
    loads a sub-command's module only when it runs (cli.main.COMMANDS), so what they load is
    the root plus their own module."""
    module = COMMANDS[command].target.partition(":")[0]
    assert module in MODULES
    everything = reachable([f"{PACKAGE}.cli.main", module])
    loaded = [module for module in everything if any(under(module, tool) for tool in DEV_TOOLING)]
    assert [chain(everything, module) for module in loaded] == []


def test_the_runtime_package_imports_no_dev_tooling_and_names_it_once() -> None:
    """The dev tooling (devtools/) is not in the wheel the images install: no module of the
    runtime imports it, not even inside a function, and the one place naming it is the CLI's
    hook, `cli.main.DEVTOOLS_PACKAGE`, through which `cluster` and `demo` alone are imported."""
    tooling = [module for module in MODULES for name in imports_of(module) if under(name, DEVTOOLS_PACKAGE)]
    assert tooling == []
    naming = [module for module, (path, _) in MODULES.items() if DEVTOOLS_PACKAGE in path.read_text()]
    assert naming == [f"{PACKAGE}.cli.main"]
    through_the_hook = {name for name, spec in COMMANDS.items() if spec.devtools}
    assert through_the_hook == {"cluster", "demo"}
    targets = {name for name, spec in COMMANDS.items() if under(spec.target, DEVTOOLS_PACKAGE)}
    assert targets == through_the_hook


def test_bench_takes_from_the_demo_only_the_workload_it_replays() -> None:
    """bench/'s placement section runs the demo's VM fleet on the demo's scenario; the rest
    it shares with the demo (example config, placement quality) comes from the dev tooling's
    shared modules, never from the demo's entry point, scenes or report (matplotlib, rich)."""
    allowed = {f"{DEVTOOLS_PACKAGE}.demo.{name}" for name in ("run", "scenario", "workload")}
    found: set[str] = set()
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and under(node.module or "", f"{DEVTOOLS_PACKAGE}.demo"):
                found.add(node.module or "")
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if under(a.name, f"{DEVTOOLS_PACKAGE}.demo"))
    assert found <= allowed and found, sorted(found - allowed)


def test_the_cli_root_imports_no_command() -> None:
    """The commands are imported lazily: the root module names them, it does not import them."""
    commands = {spec.target.partition(":")[0] for spec in COMMANDS.values()}
    assert commands & set(reachable([f"{PACKAGE}.cli.main"])) == set()


def test_the_graph_is_read() -> None:
    """Guards the guard: a rename that left the rules above checking nothing must fail here."""
    assert f"{PACKAGE}.framework.runtime" in MODULES and REGISTRY in MODULES
    assert f"{PACKAGE}.plugins.noderesources.fit" in reachable([REGISTRY])
    assert f"{PACKAGE}.framework.interface" in imports_of(f"{PACKAGE}.pluginapi")
    assert "matplotlib" in reachable([f"{PACKAGE}.replay.plots"])
