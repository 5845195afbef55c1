"""Node ranges on the command line, as pdsh, clush and Slurm write them."""

import pytest

from dltui import cli
from dltui.transport.factory import build_transports, node_names
from dltui.transport.hostspec import HostSpecError, expand_ranges, parse_destination
from dltui.transport.ssh.options import SshOptions


@pytest.mark.parametrize(
    "given, expanded",
    [
        (["gpu[01-03]"], ["gpu01", "gpu02", "gpu03"]),
        (["gpu[1-3,7]"], ["gpu1", "gpu2", "gpu3", "gpu7"]),
        (["gpu[8-11]"], ["gpu8", "gpu9", "gpu10", "gpu11"]),  # no leading zero: no padding
        (["gpu[098-101]"], ["gpu098", "gpu099", "gpu100", "gpu101"]),
        (["rack[1-2]-gpu[1-2].dc"], ["rack1-gpu1.dc", "rack1-gpu2.dc", "rack2-gpu1.dc", "rack2-gpu2.dc"]),
        (["ops@gpu[1-2]:2222"], ["ops@gpu1:2222", "ops@gpu2:2222"]),
        (["[2001:db8::1]:22", "[gpu01]:2222", "gpu01"], ["[2001:db8::1]:22", "[gpu01]:2222", "gpu01"]),  # untouched
    ],
)
def test_ranges_expand_and_everything_else_stays_as_written(given, expanded):
    assert expand_ranges(given) == expanded
    for name in expanded:
        parse_destination(name)  # each is a destination ssh would take


@pytest.mark.parametrize("bad, words", [("gpu[5-2]", "runs backwards"), ("gpu[1-99999]", "more than 10000 nodes")])
def test_a_bad_range_is_a_plain_usage_error(bad, words, capsys):
    with pytest.raises(HostSpecError, match=words.replace("[", r"\[")):
        expand_ranges([bad])
    assert cli.main(["snapshot", bad]) == cli.SNAPSHOT_USAGE_ERROR
    assert cli.main(["watch", bad]) == cli.USAGE_ERROR
    assert words in capsys.readouterr().err


def test_the_fleet_gets_each_node_once():
    transports = build_transports(["gpu[01-03]", "gpu02", "localhost"], 1.0, SshOptions())
    assert sorted(node_names(transports)) == ["gpu01", "gpu02", "gpu03", "localhost"]
