"""Job rules: a hung job (idle GPU, memory held, idle power) and kernels spinning without work.
The starvation detector has its own file (test_starvation.py)."""

from tests.unit.rules_support import Rig, busy_gpu

NO_JOB = dict(utilization_percent=0, utilization_samples_percent=[0] * 6, memory_used_mib=500, processes=[], power_w=70.0)
HUNG = dict(utilization_percent=0, utilization_samples_percent=[0] * 6, memory_used_mib=60000, power_w=74.0)


def test_an_idle_gpu_holding_memory_at_idle_power_is_a_hung_job():
    rig = Rig()
    rig.run(60, [busy_gpu(0, **NO_JOB)])  # learns this GPU idles at 70 W
    rig.run(300, [busy_gpu(0, **HUNG)])
    assert rig.alert("job_hung") is None
    rig.run(6, [busy_gpu(0, **HUNG)])
    alert = rig.alert("job_hung")
    assert alert.severity == "critical"
    assert alert.message == (
        "GPU idle at 0 % with 58.6 GiB of memory held and power at idle (74 W, near its idle 70 W) for 5m05s;"
        " processes 4242 — the job looks hung: read its log or a stack dump (py-spy dump --pid …), then restart it"
    )
    assert rig.alert("loader_starvation") is None  # one long zero is not a starving loader
    rig.run(25, [busy_gpu(0)])
    assert rig.alert("job_hung") is not None  # clears after 30 s of work
    rig.run(10, [busy_gpu(0)])
    assert rig.alert("job_hung") is None


def test_without_a_learnt_idle_power_a_quarter_of_the_limit_is_idle():
    rig = Rig()
    rig.run(310, [busy_gpu(0, **dict(HUNG, power_w=80.0))])
    assert "power at idle (80 W, near 25 % of its 700 W limit)" in rig.alert("job_hung").message


def test_an_idle_looking_gpu_drawing_real_power_is_not_hung():
    rig = Rig()
    rig.run(400, [busy_gpu(0, **dict(HUNG, power_w=300.0))])
    assert rig.alert("job_hung") is None


def test_full_utilisation_at_low_power_is_a_spin_stall():
    rig = Rig()
    rig.run(306, [busy_gpu(0, utilization_percent=99, power_w=150.0)])
    alert = rig.alert("job_spin_stall")
    assert alert.severity == "warning"
    assert alert.message.startswith("utilisation 99 % but power only 150 W of 700 W for 5m05s — kernels are spinning")
    rig.run(5, [busy_gpu(0, utilization_percent=99, power_w=400.0)])
    assert rig.alert("job_spin_stall") is None
    working = Rig()
    working.run(400, [busy_gpu(0, utilization_percent=99, power_w=600.0)])
    assert working.alerts() == {}
