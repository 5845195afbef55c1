"""Thermal and power rules, positive and negative, on generated series and real captures."""

from dltui.core.models import GpuFacts, NodeFacts
from tests.unit.rules_support import H100_THROTTLED, Rig, busy_gpu, capture


def one(**values):
    return lambda t: [busy_gpu(0, **values)]


def test_the_throttled_h100_capture_raises_hw_slowdown_and_power_brake_on_every_gpu():
    facts, gpus = capture(H100_THROTTLED)
    rig = Rig(facts=facts)
    rig.run(5, gpus)
    alerts = rig.alerts()
    for gpu in range(8):
        assert alerts[("hw_slowdown", gpu)].severity == "critical"
        assert alerts[("power_brake", gpu)].severity == "critical"
        assert alerts[("power_brake", gpu)].message.startswith("HW power brake active (0x80) for 4.0s; SM 86 of 1980 MHz, power ")
        assert alerts[("power_brake", gpu)].message.endswith(" — check PSU and power cabling")
    # Nothing else: 29–32 °C, margin ≥ 55 °C, 67 lifetime PCIe replays (no rise), ECC all zero.
    assert {rule for rule, _ in alerts} == {"hw_slowdown", "power_brake"}


def test_a_one_sample_hw_slowdown_blip_is_not_an_alert():
    rig = Rig()
    rig.run(20, lambda t: [busy_gpu(0, clock_event_reasons_mask=0x8 if t == 5 else 0)])
    assert rig.alerts() == {}
    rig.run(3, one(clock_event_reasons_mask=0x8, clock_event_reasons=["hw_slowdown"], sm_clock_mhz=900))
    assert rig.alert("hw_slowdown") is None
    rig.run(1, one(clock_event_reasons_mask=0x8, clock_event_reasons=["hw_slowdown"], sm_clock_mhz=900))
    alert = rig.alert("hw_slowdown")
    assert alert.message == (
        "HW slowdown active (0x8: hw_slowdown) for 3.0s; SM 900 of 1980 MHz, core 62 °C, margin 28 °C, HBM 70 °C"
        " — clocks cut by heat, a power brake or a power spike: check temperatures, PSU and cabling"
    )
    rig.run(119, one())
    assert rig.alert("hw_slowdown") is not None  # clears after 120 s clean
    rig.run(2, one())
    assert rig.alert("hw_slowdown") is None


def test_power_brake_from_its_counter_alone_is_immediate():
    rig = Rig()
    rig.run(3, one(clock_event_hw_power_brake_us=1_000_000))
    assert rig.alerts() == {}
    rig.run(1, one(clock_event_hw_power_brake_us=1_400_000))
    assert rig.alert("power_brake").message.startswith("HW power brake (40 % of the time); SM 1980 of 1980 MHz")


def test_hw_thermal_slowdown_is_critical_after_two_samples():
    rig = Rig()
    rig.run(1, one(clock_event_reasons_mask=0x40, clock_event_reasons=["hw_thermal_slowdown"]))
    assert rig.alert("thermal_slowdown") is None
    rig.run(1, one(clock_event_reasons_mask=0x40, clock_event_reasons=["hw_thermal_slowdown"]))
    alert = rig.alert("thermal_slowdown")
    assert alert.severity == "critical"
    assert alert.message.startswith("HW thermal slowdown active (0x40: hw_thermal_slowdown) for 1.0s; core 62 °C, margin 28 °C")


def test_sw_thermal_slowdown_is_a_warning_for_its_first_minute_then_critical():
    rig = Rig()
    sw = one(clock_event_reasons_mask=0x20, clock_event_reasons=["sw_thermal_slowdown"], temperature_margin_c=0)
    rig.run(59, sw)
    assert rig.alert("thermal_slowdown").severity == "warning"
    rig.run(2, sw)
    assert rig.alert("thermal_slowdown").severity == "critical"
    assert rig.timeline("thermal_slowdown") == [("alert-opened", "warning"), ("alert-changed", "critical")]


def test_a_rise_in_the_thermal_counter_proves_a_slowdown_between_readings():
    rig = Rig()
    rig.run(2, one(clock_event_hw_thermal_us=5_000_000))
    rig.run(1, one(clock_event_hw_thermal_us=7_500_000))
    # 2.5 s counted in one 1 s interval (a late reading): never more than all of the time
    assert rig.alert("thermal_slowdown").message.startswith("HW thermal slowdown (100 % of the time); core 62 °C")


def test_a_slowdown_counted_every_second_reads_as_one_sentence_with_its_share_of_the_time():
    """Both thermal counters rising by a second a second with the bits clear between
    readings: what happened, for how long, and how much of that time; no per-reading sums."""
    rig = Rig()
    rig.run(1, one())
    rig.run(153, lambda t: [busy_gpu(0, clock_event_hw_thermal_us=int(t * 1e6), clock_event_sw_thermal_us=int(t * 1e6))])
    alert = rig.alert("thermal_slowdown")
    assert alert.message.startswith("HW and SW thermal slowdown for 2m31s (100 % of the time); core 62 °C, margin 28 °C")
    assert "since the last reading" not in alert.message


def test_a_slowdown_counted_part_of_the_time_says_which_part():
    rig = Rig()
    rig.run(1, one())
    rig.run(
        62,
        lambda t: [busy_gpu(0, clock_event_hw_thermal_us=int(t * 250_000), clock_event_sw_thermal_us=int(t * 500_000))],
    )
    assert rig.alert("thermal_slowdown").message.startswith(
        "HW and SW thermal slowdown for 1m00s; HW 25 % and SW 50 % of the time, core 62 °C"
    )
    rig.run(121, one(clock_event_hw_thermal_us=15_000_000, clock_event_sw_thermal_us=30_000_000))
    assert rig.alert("thermal_slowdown") is None  # quiet for clear_s: closed
    rig.run(1, one(clock_event_hw_thermal_us=15_000_000, clock_event_sw_thermal_us=30_500_000))
    rig.run(1, one(clock_event_hw_thermal_us=15_000_000, clock_event_sw_thermal_us=31_000_000))
    assert rig.alert("thermal_slowdown").message.startswith("SW thermal slowdown for 1.0s (50 % of the time)")


def test_core_temperature_is_only_a_warning_where_a_margin_exists():
    rig = Rig()
    rig.run(36, one(temperature_c=91, temperature_margin_c=6))
    alert = rig.alert("gpu_temp_high")
    assert alert.severity == "warning"
    assert alert.message.startswith("core 91 °C ≥ 85 °C for 35s; T.Limit margin 6 °C — check airflow")


def test_core_temperature_names_the_drivers_slowdown_point_where_it_is_absolute():
    facts, gpus = capture("rtx-2080-super_610.57.04_load_q.txt")
    gpus[0].update(temperature_c=88, utilization_percent=99)
    rig = Rig(facts=facts)
    rig.run(31, gpus)
    assert rig.alert("gpu_temp_high").message == (
        "core 88 °C ≥ 85 °C for 30s; this GPU reports no T.Limit margin, so core temperature is the only thermal"
        " signal; the driver slows clocks at 97 °C — check airflow, fans and inlet temperature"
    )


def test_thermal_margin_low_warns_at_10_and_is_critical_at_3():
    rig = Rig()
    rig.run(55, one(temperature_margin_c=8, temperature_c=80))
    assert rig.alert("thermal_margin_low") is None
    rig.run(10, one(temperature_margin_c=8, temperature_c=80))
    assert rig.alert("thermal_margin_low").message.startswith("margin 8 °C to T.Limit ≤ 10 °C for 1m00s; core 80 °C")


def test_thermal_margin_low_names_the_offsets_the_driver_gives():
    facts, gpus = capture(H100_THROTTLED)
    for g in gpus:
        g.update(temperature_margin_c=2, clock_event_reasons_mask=0, clock_event_reasons=[])
    rig = Rig(facts=facts)
    rig.run(11, gpus)
    alert = rig.alert("thermal_margin_low", 7)
    assert alert.severity == "critical"
    assert "HW slowdown at margin -2 °C, shutdown at -8 °C" in alert.message


def test_a_gpu_without_a_margin_makes_the_margin_rule_not_applicable():
    facts, gpus = capture("rtx-2080-super_610.57.04_load_q.txt")
    rig = Rig(facts=facts)
    rig.run(120, gpus)
    assert rig.alerts() == {("persistence_off", 0): rig.alert("persistence_off")}  # and nothing thermal


def test_hbm_uses_the_drivers_absolute_limit_else_the_default_and_says_which():
    facts, gpus = capture("titan-v_560.35.03_q.txt")
    gpus[0]["memory_temperature_c"] = 91
    rig = Rig(facts=facts)
    rig.run(61, gpus)
    assert rig.alert("hbm_temp_high").message.startswith("HBM 91 °C, limit 95 °C for 1m00s; the driver's memory limit;")
    default = Rig()
    default.run(61, one(memory_temperature_c=96))
    alert = default.alert("hbm_temp_high")
    assert alert.severity == "critical"
    assert "default limit: the driver gives no absolute memory limit" in alert.message


def test_power_capping_under_load_is_info_and_at_light_load_nothing():
    rig = Rig()
    rig.run(70, one(clock_event_reasons_mask=0x4, clock_event_reasons=["sw_power_cap"], power_w=699.0))
    alert = rig.alert("power_capped")
    assert alert.severity == "info"
    assert alert.message.startswith("holding power at the cap: 699 W of 700 W at 97 % utilisation")
    light = Rig()
    light.run(70, one(clock_event_reasons_mask=0x4, utilization_percent=50))
    assert light.alerts() == {}


def test_clock_sag_without_a_reason_warns_and_with_a_power_cap_does_not():
    rig = Rig()
    rig.run(66, one(sm_clock_mhz=1500))
    assert rig.alert("clock_sag").message.startswith("SM clock 1500 MHz, 76 % of its 1980 MHz maximum at 97 % utilisation")
    capped = Rig()
    capped.run(66, one(sm_clock_mhz=1500, clock_event_reasons_mask=0x4))
    assert capped.alert("clock_sag") is None


def test_one_gpu_hotter_than_its_siblings_at_the_same_load_is_an_airflow_warning():
    rig = Rig(facts=NodeFacts(gpus=[GpuFacts(i) for i in range(8)]))
    rig.run(310, lambda t: [busy_gpu(i, temperature_margin_c=14 if i == 5 else 27 + i % 2) for i in range(8)])
    assert set(rig.alerts()) == {("airflow_imbalance", 5)}
    assert rig.alert("airflow_imbalance", 5).message.startswith(
        "13 °C hotter than 7 GPUs at similar load (margin 14 °C against a median 27 °C) for 5m05s"
    )


def test_airflow_needs_three_loaded_gpus():
    rig = Rig()
    rig.run(310, lambda t: [busy_gpu(0, temperature_c=85), busy_gpu(1, temperature_c=60), busy_gpu(2, utilization_percent=0)])
    assert rig.alert("airflow_imbalance", 0) is None
