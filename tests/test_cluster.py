"""Dask cluster runs (issue 14): same bytes as a local run, worker death survived, bad
addresses refused quickly. One LocalCluster of two worker processes on 127.0.0.1."""

import os
import platform
import signal
import time
from pathlib import Path

import pytest
from page_faults import faults_per_round
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import ConfigError, WdnExplainWarning
from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import ScenarioConfig, parse_config
from wdn_explain.timeline import ExplainSettings
from wdn_explain.waq import generate_waq

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

SPEC = ScenarioConfig(duration_s=2400, reporting_step_s=300, seed=7)
BAD_ADDRESS = "tcp://127.0.0.1:1"  # nothing listens on port 1


@pytest.fixture
def connect_timeout_1s(monkeypatch):
    """Dask retries a refused connection for CONNECT_TIMEOUT_S (5 s); one says the same."""
    from wdn_explain import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)


@pytest.fixture(scope="module")
def cluster():
    """The scheduler address of the project's two-worker LocalCluster."""
    from wdn_explain.cluster import local_cluster

    with local_cluster(2) as address:
        yield address


def _scenario_bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("scenario_*.npz"))}


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_a_local_workers_task_gets_its_freed_buffers_back_without_faults(cluster):
    # with glibc's thresholds as Dask or glibc set them, a worker's task thread gave freed
    # buffers back to the kernel and faulted them in again: 0.1-0.3 M pages a placement
    # chunk, every chunk (wdn_explain.allocator); here ~14 500 every round
    with distributed.Client(cluster, set_as_default=False) as client:
        counts = client.submit(faults_per_round, pure=False).result()
    assert counts[0] >= 0.9 * (19 << 20) / os.sysconf("SC_PAGE_SIZE")  # faults are counted
    assert max(counts[2:]) < 100, counts  # the first round may grow the heap


def test_local_workers_do_not_sample_their_stacks(cluster):
    # no dashboard shows the profile; the sampler cost a placement chunk ~5 % of its CPU
    with distributed.Client(cluster, set_as_default=False) as client:
        found = client.run(dask.config.get, "distributed.worker.profile.enabled")
    assert len(found) == 2 and set(found.values()) == {False}


def _intervals_ms(dask_worker=None, dask_scheduler=None):
    """How often the Dask server it runs on (worker, nanny or scheduler: Dask passes it by
    these names) runs its watches, in ms: its running periodic callbacks."""
    server = dask_worker or dask_scheduler
    watches = ("tick", "monitor", "memory_monitor")
    return {k: pc.callback_time for k, pc in server.periodic_callbacks.items() if k in watches}


def test_local_cluster_watches_its_loops_and_memory_less_often(cluster):
    # Dask's 20 ms event-loop ticks, 500 ms process samples and 100 ms memory checks cost the
    # calling process (scheduler, nannies) 3.3 s of CPU over a 100-scenario placement; the
    # cluster's own running servers, not the config, are what this reads
    quiet = {"tick": 1000, "monitor": 5000, "memory_monitor": 1000}
    with distributed.Client(cluster, set_as_default=False) as client:
        workers = client.run(_intervals_ms)
        nannies = client.run(_intervals_ms, nanny=True)
        scheduler = client.run_on_scheduler(_intervals_ms)
    assert list(workers.values()) == [quiet, quiet]
    assert list(nannies.values()) == [quiet, quiet]
    assert scheduler == {"tick": 1000, "monitor": 5000}  # it has no memory watch


def test_generation_equals_serial(cluster, tmp_path, tiny_config):
    serial = generate_waq(tiny_config, tmp_path / "serial", n_workers=1)
    remote = generate_waq(tiny_config, tmp_path / "cluster", scheduler=cluster)
    expected = _scenario_bytes(serial)
    assert len(expected) == tiny_config.n_scenarios
    assert _scenario_bytes(remote) == expected


def test_explanation_batch_equals_serial(cluster, tmp_path, tiny_model_dir):
    serial, status = explain_scenario(SPEC, tiny_model_dir, out=tmp_path / "serial.npz")
    assert status == "computed"
    remote, status = explain_scenario(
        SPEC,
        tiny_model_dir,
        out=tmp_path / "cluster.npz",
        scheduler=cluster,
        gpu=True,  # no worker offers a GPU: falls back to the CPU workers
    )
    assert status == "computed"
    assert (tmp_path / "cluster.npz").read_bytes() == (tmp_path / "serial.npz").read_bytes()
    assert not (tmp_path / ".cluster.npz.partial").exists()  # step store removed


def test_settings_arrive_unchanged_on_the_workers(cluster, tmp_path, tiny_model_dir):
    """The explain settings travel to the workers as one record: the memory budget and the
    method the workers' explainers run with are the ones asked for here."""
    settings = ExplainSettings(method="masked", memory_budget_gb=0.75, references=("mean",))
    explain_scenario(
        SPEC,
        tiny_model_dir,
        settings=settings,
        out=tmp_path / "t.npz",
        scheduler=cluster,
    )

    def explainers_here():
        from wdn_explain.pipeline import _TASK_EXPLAINERS

        return [(k[1], e.method, e.memory_budget_gb) for k, e in _TASK_EXPLAINERS.items()]

    with distributed.Client(cluster, set_as_default=False) as client:
        found = [x for on_worker in client.run(explainers_here).values() for x in on_worker]
    ours = {
        (method, memory) for sent, method, memory in found if sent == settings.model_dump_json()
    }
    assert ours == {("masked", 0.75)}  # other tests' runs may have left their own explainers


def test_worker_killed_mid_run_every_output_once(cluster, tmp_path):
    config = parse_config(
        {"n_scenarios": 16, "seed": 2, "scenario": {"duration_s": 3600, "reporting_step_s": 300}}
    )
    serial = generate_waq(config, tmp_path / "serial", n_workers=1)
    killed = []

    def kill_a_busy_worker(done: int, total: int) -> None:
        if killed or done == 0:
            return
        with distributed.Client(cluster, set_as_default=False) as client:
            busy = [addr for addr, keys in client.processing().items() if keys]
            pids = client.run(os.getpid, workers=busy[:1])
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    out = generate_waq(
        config,
        tmp_path / "cluster",
        scheduler=cluster,
        progress=kill_a_busy_worker,
    )
    assert killed, "no worker was busy to kill"
    assert _scenario_bytes(out) == _scenario_bytes(serial)  # each scenario once, complete


def test_result_lost_after_finishing_is_not_a_failure(cluster):
    """A finished task whose worker dies before its result is read is recomputed elsewhere:
    its outcome is the recomputed one, not a failure (seen once in CI as "...: None")."""
    from wdn_explain.cluster import _failure, _settled

    with distributed.Client(cluster, set_as_default=False) as client:
        future = client.submit(_settled, time.sleep, 1.0, key="lost-result", pure=False)
        client.gather(future)
        holder = next(iter(client.who_has(future)["lost-result"]))
        pid = client.run(os.getpid, workers=[holder])[holder]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while future.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert future.status != "finished", "the scheduler never noticed the dead worker"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the run's loop: wait again while recomputed
            try:
                assert _failure(future) is None
                break
            except TimeoutError:
                continue
        assert future.status == "finished"


def test_result_cancelled_with_the_lost_scheduler_reports_the_scheduler():
    """A task cancelled because the client lost the scheduler, also while its finished result
    is fetched (seen in CI: the scheduler killed mid-batch), is a lost scheduler, not a task
    that failed; cancelled while the client is connected, it is a failure."""
    from types import SimpleNamespace

    from distributed.client import FutureCancelledError

    from wdn_explain.cluster import _failure

    class Cancelled:
        def __init__(self, status: str, client_status: str) -> None:
            self.status, self.client = status, SimpleNamespace(status=client_status)

        def result(self, timeout: float) -> None:
            raise FutureCancelledError("k", "scheduler-connection-lost")

    for status in ("finished", "cancelled"):  # cancelled while fetched, or before
        with pytest.raises(ConnectionError):
            _failure(Cancelled(status, "connecting"))
        assert _failure(Cancelled(status, "running")) == "cancelled by the scheduler"


def test_bad_scheduler_address_fails_fast(tmp_path, tiny_config, connect_timeout_1s):
    start = time.monotonic()
    with pytest.raises(ConfigError, match="scheduler 'tcp://127.0.0.1:1' is not reachable"):
        generate_waq(tiny_config, tmp_path / "out", scheduler=BAD_ADDRESS)
    assert time.monotonic() - start < 30  # a clear error, not a hang
    assert not (tmp_path / "out" / "manifest.json").exists()  # a corrected run starts afresh


def test_cli_bad_scheduler_one_line(tmp_path, connect_timeout_1s):
    config = tmp_path / "c.yaml"
    config.write_text(f"n_scenarios: 1\nscheduler: '{BAD_ADDRESS}'\n")
    result = CliRunner().invoke(app, ["simulate", "--config", str(config), "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "not reachable" in result.output and "Traceback" not in result.output


def test_scheduler_key_does_not_change_the_hash(tiny_config):
    there = tiny_config.model_copy(update={"scheduler": "tcp://10.0.0.1:8786"})
    assert there.config_hash() == tiny_config.config_hash()
    assert parse_config({"scheduler": "tcp://h:1"}).scheduler == "tcp://h:1"


def test_failures_are_reported_per_task_at_the_end(cluster):
    from wdn_explain.cluster import failure_report, run_tasks

    seen = []
    failures = run_tasks(
        cluster,
        lambda i: 1 // (i - 1),  # task 1 fails (every retry), the others finish
        [(f"t-{i}", (i,)) for i in range(4)],
        progress=lambda done, total: seen.append((done, total)),
    )
    assert list(failures) == ["t-1"] and "ZeroDivisionError" in failures["t-1"]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert (
        failure_report(failures, "scenarios").splitlines()[0]
        == "1 scenarios failed on the cluster:"
    )


class _Client:
    def __init__(self, *resources):
        self.workers = {f"w{i}": {"resources": r} for i, r in enumerate(resources)}

    def scheduler_info(self):
        return {"workers": self.workers}


def test_gpu_workers_asked_for_when_present():
    from wdn_explain.cluster import gpu_resources

    assert gpu_resources(_Client({}, {"GPU": 1}), want_gpu=True) == {"GPU": 1}
    with pytest.warns(WdnExplainWarning, match="no Dask worker offers a GPU resource"):
        assert gpu_resources(_Client({}, {}), want_gpu=True) is None  # CPU fallback
    assert gpu_resources(_Client({"GPU": 1}), want_gpu=False) is None


def _count_and_refuse(marker: str) -> None:
    """A task that records each attempt, then fails as bad input does."""
    with open(marker, "a") as f:
        f.write("x")
    raise ConfigError("scenario 3: injection node '99' is not in the network")


def test_bad_input_fails_once_with_its_message(cluster, tmp_path):
    """A WdnExplainError (the same on every worker) is reported with its own message and not
    retried; an unexpected error (above) is retried and then reported."""
    from wdn_explain.cluster import run_tasks

    marker = tmp_path / "attempts"
    failures = run_tasks(cluster, _count_and_refuse, [("bad", (str(marker),))])
    assert failures == {"bad": "scenario 3: injection node '99' is not in the network"}
    assert marker.read_text() == "x"


def test_unexpected_errors_are_retried(cluster, tmp_path):
    from wdn_explain.cluster import RETRIES, run_tasks

    marker = tmp_path / "attempts"

    def flaky(path):
        with open(path, "a") as f:
            f.write("x")
        raise OSError("shared folder not mounted yet")

    failures = run_tasks(cluster, flaky, [("flaky", (str(marker),))])
    assert "shared folder not mounted yet" in failures["flaky"]
    assert marker.read_text() == "x" * (RETRIES + 1)


@pytest.fixture
def threaded_cluster(tmp_path):
    """A scheduler and one `dask worker --nthreads 2` process started from the command line,
    the worker in its own directory (where EPANET would drop its scratch files)."""
    import subprocess
    import sys

    info = tmp_path / "scheduler.json"
    home = tmp_path / "worker-home"
    home.mkdir()
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = subprocess.Popen(
        [*dask, "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", str(info)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    worker = None
    try:
        for _ in range(300):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(info),
             "--nthreads", "2", "--no-dashboard", "--no-nanny"],
            cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import json

        address = json.loads(info.read_text())["address"]
        with distributed.Client(address, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
        yield address, home, scheduler, worker
    finally:
        for proc in (worker, scheduler):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_two_threads_per_worker_lose_no_scenario(threaded_cluster, tmp_path):
    """Tasks never change the working directory: two threads of one worker simulate side by
    side (64 of 120 scenarios failed when each task changed it), and EPANET's scratch files
    stay out of the worker's own directory."""
    address, home, _, _ = threaded_cluster
    config = parse_config(
        {"n_scenarios": 12, "seed": 5, "scenario": {"duration_s": 1800, "reporting_step_s": 300}}
    )
    serial = generate_waq(config, tmp_path / "serial", n_workers=1)
    out = generate_waq(config, tmp_path / "threads", scheduler=address)
    assert _scenario_bytes(out) == _scenario_bytes(serial)
    assert sorted(p.name for p in home.iterdir() if p.name.startswith("en")) == []
    with distributed.Client(address, set_as_default=False) as client:
        (cwd,) = client.run(os.getcwd).values()
    assert Path(cwd).name.startswith("wdn-explain-worker-")  # where EPANET's files go


def test_lost_scheduler_is_reported_in_one_line(threaded_cluster, tmp_path):
    from wdn_explain.cluster import LOST_SCHEDULER_S

    address, _, scheduler, _ = threaded_cluster
    config = parse_config(
        {"n_scenarios": 400, "seed": 5, "scenario": {"duration_s": 1800, "reporting_step_s": 300}}
    )

    def kill_scheduler(done: int, total: int) -> None:
        if done >= 2 and scheduler.poll() is None:
            scheduler.kill()

    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        generate_waq(config, tmp_path / "out", scheduler=address, progress=kill_scheduler)
    message = str(info.value)
    assert message.startswith(f"lost the scheduler '{address}'")
    assert message.endswith("tasks unfinished); finished outputs are kept: run again to resume")
    assert "\n" not in message
    assert time.monotonic() - start < LOST_SCHEDULER_S + 60
    assert len(list((tmp_path / "out").glob("scenario_*.npz"))) >= 2  # kept for a rerun


def test_cluster_without_workers_is_reported(threaded_cluster, tmp_path, monkeypatch):
    from wdn_explain import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "NO_WORKERS_S", 3)
    address, _, _, worker = threaded_cluster
    worker.kill()
    worker.wait()
    start = time.monotonic()
    expected = rf"the cluster at '{address}' has had no workers for 3 s \(2 tasks unfinished\)"
    with pytest.raises(ConfigError, match=expected):
        generate_waq(
            parse_config({"n_scenarios": 2, "scenario": {"duration_s": 1800}}),
            tmp_path / "out",
            scheduler=address,
        )
    assert time.monotonic() - start < 60


def test_explain_checks_the_scheduler_before_simulating(
    tmp_path, tiny_model_dir, monkeypatch, connect_timeout_1s
):
    from wdn_explain import pipeline

    monkeypatch.setattr(pipeline, "simulate", lambda *a, **k: pytest.fail("simulated"))
    with pytest.raises(ConfigError, match="scheduler 'tcp://127.0.0.1:1' is not reachable"):
        explain_scenario(SPEC, tiny_model_dir, out=tmp_path / "t.npz", scheduler=BAD_ADDRESS)
    assert list(tmp_path.iterdir()) == []


def test_every_worker_dead_with_results_unread_stops_in_one_line(threaded_cluster, monkeypatch):
    """The only worker dies while finished tasks' results are still unread: their results
    are recomputed, with no worker to do it. The run stops after NO_WORKERS_S (3 s here)
    in one line instead of waiting for the results forever (issue 33 item 6)."""
    from concurrent.futures import ThreadPoolExecutor

    from wdn_explain import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "NO_WORKERS_S", 3)
    address, _, _, worker = threaded_cluster

    def kill_the_worker_once(done: int, total: int) -> None:
        if worker.poll() is None:
            time.sleep(2)  # the other naps finish; their results stay on the worker
            worker.kill()
            worker.wait()

    tasks = [(f"nap-{os.getpid()}-{i}", (0.05,)) for i in range(6)]
    run = ThreadPoolExecutor(1).submit(
        cluster_module.run_tasks, address, time.sleep, tasks, progress=kill_the_worker_once
    )
    expected = rf"the cluster at '{address}' has had no workers for 3 s \(5 tasks unfinished\)"
    with pytest.raises(ConfigError, match=expected):
        run.result(timeout=90)


def test_cli_lost_scheduler_is_one_line_without_dasks_tracebacks(threaded_cluster, tmp_path):
    """`simulate --scheduler` in a real process whose scheduler is killed mid-run: the last
    line is the error, and Dask's client log adds no traceback before it (issue 33 item 6)."""
    import subprocess
    import sys

    address, _, scheduler, _ = threaded_cluster
    config = tmp_path / "c.yaml"
    config.write_text("n_scenarios: 400\nseed: 5\nscenario: {duration_s: 1800}\n")
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-m", "wdn_explain", "simulate", "--config", str(config), "--out",
         str(out), "--scheduler", address],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(out.glob("scenario_*.npz"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    scheduler.kill()
    output, _ = child.communicate(timeout=120)
    assert child.returncode == 1
    assert output.strip().splitlines()[-1].startswith(f"error: lost the scheduler '{address}'")
    assert "Traceback" not in output


def test_cli_gpu_fallback_is_said(cluster, tmp_path, tiny_model_dir):
    """`explain --gpu` on a cluster whose workers offer no GPU says it explains on CPU
    workers, in one warning line (issue 33 item 6)."""
    result = CliRunner().invoke(
        app,
        ["explain", "--model", str(tiny_model_dir), "--scenario",
         "{duration_s: 2400, reporting_step_s: 300, seed: 7}", "--out", str(tmp_path / "t.npz"),
         "--scheduler", cluster, "--gpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: no Dask worker offers a GPU resource; explaining on CPU workers\n" in (
        result.output
    )
