"""The soak's command line: durations, the bounds, and options it refuses with their flag named."""

from __future__ import annotations

import pytest
from bench.soak.__main__ import main, options_from, parser
from bench.soak.options import SoakOptions


def test_durations_take_units_and_bounds_reach_the_options() -> None:
    args = parser().parse_args(
        ["--duration", "1h", "--pod-lifetime", "90s", "--flap-every", "2m", "--max-rss-slope", "8"]
    )
    options = options_from(args, "make soak")
    assert (options.duration, options.pod_lifetime, options.flap_every) == (3600, 90, 120)
    assert options.bounds.rss_slope_mib_per_hour == 8
    assert options.docs is None


def test_docs_without_a_path_is_this_clones_reliability_page() -> None:
    options = options_from(parser().parse_args(["--docs"]), "make soak")
    assert options.docs is not None and options.docs.parts[-2:] == ("docs", "reliability.md")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--duration", "soon"], "--duration"),
        (["--pod-rate", "0"], "--pod-rate=0"),
        (["--outage", "2m", "--flap-every", "1m"], "--outage=120"),
        (["--duration", "30", "--sample-every", "15"], "--duration=30"),
        (["--node-churn-count", "30"], "--node-churn-count=30"),
    ],
)
def test_a_bad_option_is_refused_naming_it(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(flags)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_the_defaults_are_an_hour_of_churn() -> None:
    assert SoakOptions().duration == 3600
