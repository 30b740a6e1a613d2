"""The documented Slurm path (docs/benchmarks.md, examples/slurm/) on a real single-node Slurm:
Debian's slurmctld, slurmd and munged (scripts/setup_slurm.sh installs them; `make test` runs
it), started by this module's fixture on 127.0.0.1 with every file in a temporary folder, and
stopped afterwards. In CI a missing Slurm fails the test, as for the other real servers.

The array script shards a custom benchmark against the scripted server; one task is cancelled
with `scancel` halfway (maps stops cleanly on Slurm's SIGTERM), the merge then refuses naming
the missing shard and problems, the task is requeued and resumes, is stopped again by the
warning signal the script asks for before its time limit (it requeues itself), resumes again,
and the merge job's result equals a single-machine run of the same evaluation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import HoldProblems, ProblemScript, wait_for, write_custom_jsonl
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.real_servers import bound_popen, free_port, missing, stop_bound

pytestmark = pytest.mark.slurm

SHARDS = REPO / "examples" / "slurm" / "shards.sbatch"
MERGE = REPO / "examples" / "slurm" / "merge.sbatch"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scancel", "scontrol", "squeue", "sinfo")
# Fields of a results row that differ between two runs of the same problem.
VOLATILE = {"seconds", "run_dir", "usage", "usage_by_role", "schema_version"}


def _program(name: str) -> str | None:
    return shutil.which(name) or next((path for path in (f"/usr/sbin/{name}", f"/usr/bin/{name}")
                                       if os.access(path, os.X_OK)), None)


@dataclass
class Cluster:
    """A running single-node cluster: its folder and the environment its client commands need."""

    folder: Path
    env: dict[str, str]

    def run(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        done = subprocess.run(list(args), env=env or self.env, cwd=cwd, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job` of one job (or array task) as key=value pairs."""
        text = self.run("scontrol", "show", "job", "-o", job_id)
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def state(self, job_id: str) -> str:
        return self.job(job_id)["JobState"]

    def start_now(self, job_id: str) -> None:
        """A requeued job waits for its begin time (Slurm delays it): eligible now, once the
        node has cleaned up after its last run (started before, it would be refused)."""
        wait_for(lambda: self.run("sinfo", "-h", "-o", "%T") == "idle", "the node to be idle")
        self.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")


def _config(folder: Path, node: str, ports: tuple[int, int]) -> str:
    return "\n".join([
        "ClusterName=mapstest",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder}/munge/munge.socket",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd.pid",
        f"SlurmctldLogFile={folder}/log/slurmctld.log",
        f"SlurmdLogFile={folder}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",  # the node as written here, whatever the machine
        "SchedulerType=sched/backfill",
        "MpiDefault=none",
        "ReturnToService=2",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "MailProg=/bin/true",
        "KillWait=30",
        "MinJobAge=600",  # finished jobs stay visible to scontrol for the test's checks
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _daemon(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A daemon in the foreground under a keeper bound to this test process (tests/helpers/real_servers.py):
    it and everything it starts (the jobs' slurmstepd) end with this process, also when it is
    killed; its output in `log`."""
    with open(log, "ab") as out:
        return bound_popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                           start_new_session=True)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """munged, slurmctld and slurmd on 127.0.0.1, every file in a temporary folder; stopped
    (after cancelling any job left) when the module's tests are done."""
    absent = [name for name in PROGRAMS if _program(name) is None]
    if absent:
        missing(f"Slurm ({', '.join(absent)})", "bash scripts/setup_slurm.sh installs slurm-wlm and munge; "
                "make test runs it")
    if os.geteuid() != 0:
        missing("a Slurm this test can run as its own user", "slurmd starts jobs as root: run the test as root "
                "(as CI does)")
    folder = tmp_path_factory.mktemp("slurm")
    folder.chmod(0o700)
    for name in ("munge", "state", "spool", "log"):
        (folder / name).mkdir(mode=0o700)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    node = socket.gethostname().split(".")[0]  # slurmctld runs only on the host its configuration names
    conf = folder / "slurm.conf"
    conf.write_text(_config(folder, node, (free_port(), free_port())))
    env = {**clean_env(), "SLURM_CONF": str(conf)}
    munge = folder / "munge"
    daemons = [_daemon([str(_program("munged")), "--foreground", "--force", f"--socket={munge}/munge.socket",
                        f"--key-file={key}", f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/munged.seed",
                        f"--log-file={folder}/log/munged.log"], folder / "log" / "munged.out", env)]
    cluster = Cluster(folder, env)
    try:
        wait_for(lambda: (munge / "munge.socket").exists(), "munged's socket", timeout=60)
        daemons.append(_daemon([str(_program("slurmctld")), "-D", "-f", str(conf)], folder / "log" / "ctld.out", env))
        daemons.append(_daemon([str(_program("slurmd")), "-D", "-f", str(conf), "-N", node], folder / "log" / "d.out",
                               env))

        def idle() -> bool:
            done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=30)
            return done.stdout.strip() == "idle"

        wait_for(idle, "the Slurm node to be idle", timeout=120)
        yield cluster
    finally:
        subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True, timeout=60)
        try:
            wait_for(lambda: not subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True,
                                                timeout=30).stdout.strip(), "every job to end", timeout=90)
        finally:
            for daemon in reversed(daemons):
                stop_bound(daemon)


def eval_folder(runs: Path, task: int) -> Path:
    """The run folder of one array task (RUNS/<task>/eval-*)."""
    found = [path.parent for path in (runs / str(task)).glob("eval-*/manifest.json")]
    assert len(found) == 1, found
    return found[0]


def summary_of(folder: Path) -> dict[str, Any] | None:
    path = folder / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None


def rows_of(folder: Path) -> list[dict[str, Any]]:
    path = folder / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in row.items() if key not in VOLATILE} for row in rows]


def task_summary(runs: Path, task: int) -> dict[str, Any] | None:
    folders = list((runs / str(task)).glob("eval-*/summary.json"))
    return json.loads(folders[0].read_text()) if folders else None


def test_the_documented_array_stops_cleanly_requeues_and_merges_as_one_machine_would(slurm: Cluster,
                                                                                   tmp_path: Path) -> None:
    data, answers = write_custom_jsonl(tmp_path / "data", 6)  # shard 1/2: p1 p3 p5; shard 2/2: p2 p4 p6
    gate = HoldProblems(ProblemScript(answers, critic_low={"p2"}), hold={"p4"})
    runs = tmp_path / "runs" / "shards"
    logs = tmp_path / "logs"
    logs.mkdir()
    with FakeOpenAI(gate) as server:
        env = {**slurm.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{slurm.env.get('PATH', '')}",
               "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY}

        def submit(*args: str) -> str:
            return slurm.run("sbatch", "--parsable", f"--output={logs}/slurm-%A_%a.out", *args, env=env, cwd=tmp_path)

        array = submit("--array=1-2", str(SHARDS), str(runs), "custom", "--data", str(data), "--concurrency", "1",
                       "--no-cache", "--quiet")
        first_merge = submit(f"--dependency=afterok:{array}", str(MERGE), str(runs), str(tmp_path / "merged"))

        # Halfway through task 2 (p2 done, p4 in flight): scancel. Slurm sends SIGTERM to every
        # process of the task; maps stops as on Ctrl-C: p2 saved, the summary written.
        gate.wait_held("p4")
        wait_for(lambda: len(rows_of(eval_folder(runs, 2))) == 1, "task 2's first row")
        slurm.run("scancel", f"{array}_2")
        wait_for(lambda: (task_summary(runs, 2) or {}).get("interrupted") is True, "task 2 to stop cleanly")
        stopped = task_summary(runs, 2)
        assert stopped is not None and stopped["stopped_by"] == "SIGTERM" and stopped["complete"] is False
        assert stopped["missing"] == ["p4", "p6"]
        wait_for(lambda: slurm.state(f"{array}_2") == "CANCELLED", "task 2 cancelled")
        wait_for(lambda: slurm.state(f"{array}_1") == "COMPLETED", "task 1 to finish")
        gate.release("p4")

        # The merge knows what is missing: refused, naming the shard and its problems.
        shard_folders = [eval_folder(runs, 1), eval_folder(runs, 2)]
        refused = run_maps(["merge", *map(str, shard_folders), "--out", str(tmp_path / "early")], env=clean_env(),
                           cwd=tmp_path)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "the merge would be incomplete" in refused.stderr
        assert "shard 2/2" in refused.stderr and "'p4'" in refused.stderr and "'p6'" in refused.stderr
        only_first = run_maps(["merge", str(shard_folders[0]), "--out", str(tmp_path / "early")], env=clean_env(),
                              cwd=tmp_path)
        assert only_first.returncode == 2 and "shard 2/2 was not passed (3 problems)" in only_first.stderr
        assert not (tmp_path / "early").exists()
        # Slurm never counts a cancelled task as ok, even once requeued: this merge job never runs.
        wait_for(lambda: slurm.job(first_merge)["Reason"] == "DependencyNeverSatisfied", "the merge job's verdict")

        # Requeued, the task resumes its folder; stopped again by the warning signal the script
        # asks for before the time limit (sent here as Slurm sends it: USR1 to the batch shell),
        # it requeues itself and resumes once more.
        gate.hold = {"p6"}
        slurm.run("scontrol", "requeue", f"{array}_2")
        slurm.start_now(f"{array}_2")
        gate.wait_held("p6")
        wait_for(lambda: [row["pid"] for row in rows_of(eval_folder(runs, 2))] == ["p2", "p4"], "p4 solved on resume")
        slurm.run("scancel", "--batch", "--signal=USR1", f"{array}_2")
        wait_for(lambda: (task_summary(runs, 2) or {}).get("average", {}).get("n") == 2, "task 2 to stop again")
        assert (task_summary(runs, 2) or {})["stopped_by"] == "SIGTERM"
        wait_for(lambda: slurm.state(f"{array}_2") == "PENDING", "task 2 to requeue itself")
        gate.release()
        slurm.start_now(f"{array}_2")
        wait_for(lambda: slurm.state(f"{array}_2") == "COMPLETED", "task 2 to finish", timeout=240)
        assert (task_summary(runs, 2) or {})["complete"] is True

        slurm.run("scancel", first_merge)
        merge_job = submit(f"--dependency=afterok:{array}_2", str(MERGE), str(runs), str(tmp_path / "merged"))
        wait_for(lambda: slurm.state(merge_job) in ("COMPLETED", "FAILED"), "the merge job", timeout=240)
        assert slurm.state(merge_job) == "COMPLETED", (logs / f"slurm-{merge_job}_4294967294.out")

        # The same evaluation on one machine, against the same scripted replies.
        gate.script = ProblemScript(answers, critic_low={"p2"})
        whole = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "whole"), "--concurrency",
                          "1", "--no-cache", "--quiet"], env=clean_env(OPENAI_BASE_URL=server.base_url,
                                                                      OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    one = next((tmp_path / "whole").glob("eval-*"))
    merged = tmp_path / "merged"
    assert comparable(rows_of(merged)) == comparable(rows_of(one))
    assert [row["pid"] for row in rows_of(merged)] == [f"p{n}" for n in range(1, 7)]
    merged_summary, one_summary = summary_of(merged), summary_of(one)
    assert merged_summary is not None and one_summary is not None
    for key in ("subsets", "average", "failed", "feedback_shares", "stop_reasons", "complete", "missing"):
        assert merged_summary[key] == one_summary[key], key
    assert merged_summary["complete"] is True and merged_summary["average"]["correct"] == 4
    assert json.loads((merged / "manifest.json").read_text())["ids"] == [f"p{n}" for n in range(1, 7)]


def test_the_docs_show_the_scripts_the_slurm_test_submits() -> None:
    """docs/benchmarks.md holds each script verbatim, so the documented path is the tested one."""
    docs = (REPO / "docs" / "benchmarks.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", docs, flags=re.DOTALL)
    assert SHARDS.read_text() in blocks and MERGE.read_text() in blocks
    assert "examples/slurm/shards.sbatch" in docs and "examples/slurm/merge.sbatch" in docs


def test_a_resumed_task_leaves_out_exactly_the_options_a_resume_refuses() -> None:
    """The script drops, on a resume, the options `maps eval --resume` refuses (and the folder it
    sets itself): a task requeued with the command line it was submitted with resumes."""
    from maps_autogen.eval import FIXED_ON_RESUME

    line = next(line for line in SHARDS.read_text().splitlines() if line.strip().startswith("--subset|"))
    dropped = set(line.strip().split(")")[0].split("|"))
    assert dropped == {*FIXED_ON_RESUME.values(), "--runs-dir"}


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_an_array_from_zero_serves_its_model_in_each_task_and_merges_as_one_machine(slurm: Cluster,
                                                                                    tmp_path: Path) -> None:
    """--array=0-3 with MAPS_SERVE: each task starts its stand-in model server (the scripted server in
    a process of its own) and waits for its /health before maps eval starts; the shards are 1/4..4/4
    whatever the array's first id, and their merge equals one machine's run."""
    data, answers = write_custom_jsonl(tmp_path / "data", 8)
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    gate, started = tmp_path / "healthy", tmp_path / "started"
    runs = tmp_path / "runs" / "served"
    logs = tmp_path / "logs"
    logs.mkdir()
    serve = (f"{sys.executable} -m tests.helpers.standin_server $MAPS_SERVE_PORT {tmp_path / 'answers.json'} "
             f"{gate} {started}")
    port = free_port()  # every task's server on one port (as 8000 on every node): one address for the merge
    env = {**slurm.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{slurm.env.get('PATH', '')}",
           "PYTHONPATH": str(REPO), "MAPS_SERVE": serve, "MAPS_SERVE_PORT": str(port), "MAPS_SERVE_WAIT": "600",
           "OPENAI_API_KEY": TEST_KEY}
    # %1: one task at a time on this one node (a cluster gives each its own node and GPU)
    array = slurm.run("sbatch", "--parsable", f"--output={logs}/slurm-%A_%a.out", "--array=0-3%1", str(SHARDS),
                      str(runs), "custom", "--data", str(data), "--concurrency", "1", "--no-cache", "--quiet", env=env,
                      cwd=tmp_path)

    def ports() -> list[int]:
        return [int(line) for line in started.read_text().split()] if started.exists() else []

    # The first task's server is up and not healthy yet: its maps eval has not started.
    wait_for(lambda: len(ports()) == 1 and listening(port), "the first task's model server to start", timeout=120)
    assert not runs.exists(), "maps eval started before its server's /health answered"
    gate.touch()
    for task in range(4):
        wait_for(lambda task=task: slurm.state(f"{array}_{task}") in ("COMPLETED", "FAILED"), f"task {task}",
                 timeout=300)
        assert slurm.state(f"{array}_{task}") == "COMPLETED", (logs / f"slurm-{array}_{task}.out").read_text()
    assert ports() == [port] * 4  # each task started its own, after the one before had stopped
    wait_for(lambda: not listening(port), "the last task's server to stop with its task")
    shards = [eval_folder(runs, shard) for shard in range(1, 5)]
    assert [json.loads((folder / "manifest.json").read_text())["shard"] for folder in shards] == [
        f"{shard}/4" for shard in range(1, 5)]

    merged = tmp_path / "merged"
    done = run_maps(["merge", *map(str, shards), "--out", str(merged)], env=clean_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with FakeOpenAI(ProblemScript(answers)) as server:
        whole = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "whole"), "--concurrency",
                          "1", "--no-cache", "--quiet"],
                         env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    one = next((tmp_path / "whole").glob("eval-*"))
    assert comparable(rows_of(merged)) == comparable(rows_of(one))
    assert [row["pid"] for row in rows_of(merged)] == [f"p{n}" for n in range(1, 9)]
