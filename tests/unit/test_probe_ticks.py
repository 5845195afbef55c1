"""The probe samples on wall-clock multiples of its interval, so a fleet samples together; and
it reads the arguments dltui passes without importing argparse."""

import pytest

from dltui.node.probe.main import until_next_tick


@pytest.mark.parametrize(
    "now, interval, last_start, expected",
    [
        (100.25, 1.0, 100.25, 0.75),  # first wait after an unaligned first sample
        (100.93, 1.0, 100.90, 1.07),  # too close to the boundary: the next one, not a 70 ms gap
        (101.02, 1.0, 101.00, 0.98),  # an aligned sample that took 20 ms
        (101.60, 1.0, 101.00, 0.40),  # a slow sample (600 ms) still keeps the next tick
        (103.50, 1.0, 101.00, 0.50),  # one that overran two ticks skips them, never bursts
        (10.0, 2.0, 10.0, 2.0),  # exactly on a boundary: a whole interval
        (7.2, 0.5, 7.2, 0.3),
        (7.3, 0.5, 7.3, 0.7),  # 0.2 s would be under half an interval
    ],
)
def test_next_tick_is_the_next_wall_clock_multiple_at_least_half_an_interval_after_the_last(
    now, interval, last_start, expected
):
    assert until_next_tick(now, interval, last_start) == pytest.approx(expected)


def test_nodes_started_at_different_moments_sample_at_the_same_instants():
    take_s = 0.004  # how long one sample takes
    sample_times = []
    for started in (5.013, 5.47, 5.999):
        at, times = started, []
        for _ in range(4):
            times.append(round(at, 6))
            at = at + take_s + until_next_tick(at + take_s, 1.0, at)
        sample_times.append(times)
    assert [times[0] for times in sample_times] == [5.013, 5.47, 5.999]  # the first at once
    # then whole seconds, one apart: 5.999 skips 6.0 (1 ms after its first sample)
    assert [times[1:] for times in sample_times] == [[6.0, 7.0, 8.0], [6.0, 7.0, 8.0], [7.0, 8.0, 9.0]]


@pytest.mark.parametrize(
    "argv",
    [[], ["--interval", "0.5"], ["--interval", "2", "--stdin-watchdog", "30"], ["--count", "3", "--interval", "0.25"]],
)
def test_the_fast_argument_path_reads_what_argparse_would(argv):
    from dltui.node.probe.main import _parse_plain, _parse_with_argparse

    fast, slow = _parse_plain(argv), _parse_with_argparse(argv)
    assert fast is not None
    assert (fast.interval, fast.count, fast.stdin_watchdog) == (slow.interval, slow.count, slow.stdin_watchdog)


@pytest.mark.parametrize("argv", [["--interval", "0"], ["--interval", "nan"], ["--intervl", "1"], ["--interval"], ["--help"]])
def test_anything_else_gets_argparses_message(argv, capsys):
    from dltui.node.probe.main import parse_args

    with pytest.raises(SystemExit):
        parse_args(argv)
    said = capsys.readouterr()
    assert "dltui-probe" in said.out + said.err
