"""A throwaway one-node Slurm cluster on localhost: munged, slurmctld and slurmd under a temp dir.

Used by the tests' session fixture and by scripts that measure the Slurm scheduler. Nothing
outside the temp dir is touched; every daemon is started here and stopped by its PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from manylab.schedulers.base import PointState
from manylab.schedulers.slurm import SlurmScheduler

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "sacct")


def missing_tools() -> list[str]:
    return [tool for tool in DAEMONS if shutil.which(tool) is None]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def host_memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


@dataclass
class Cluster:
    root: Path
    conf: Path
    jobcomp: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()


CONF = """\
ClusterName=manylabtest
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/filetxt
JobCompLoc={jobcomp}
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ReturnToService=2
MinJobAge=300
InactiveLimit=0
KillWait=5
MaxArraySize=1001
NodeName=localhost CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=parked Nodes=ALL MaxTime=INFINITE State=DOWN
"""


def _start(cluster: Cluster, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=cluster.env,
                                   start_new_session=True)
    cluster.processes.append(process)
    return process


def _wait(what: str, check: object, cluster: Cluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in cluster.processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited {process.returncode} while "
                                   f"waiting for {what}; logs in {cluster.root}")
        if callable(check) and check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}; logs in {cluster.root}")


def node_state(cluster: Cluster) -> str:
    result = subprocess.run(["sinfo", "-h", "-p", "debug", "-o", "%T"], capture_output=True,
                            text=True, env=cluster.env, check=False)
    return result.stdout.strip()


def start(root: Path | None = None) -> Cluster:
    """Start munged, slurmctld and slurmd; return once the node is idle."""
    root = root or Path(tempfile.mkdtemp(prefix="manylab-slurm-"))
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    munge_socket = root / "munge" / "munge.socket"
    conf = root / "slurm.conf"
    jobcomp = root / "jobcomp.log"
    conf.write_text(CONF.format(root=root, ctld_port=free_port(), slurmd_port=free_port(),
                                munge_socket=munge_socket, jobcomp=jobcomp,
                                cpus=os.cpu_count() or 1,
                                memory_mb=max(512, host_memory_mb() - 1024)))
    cluster = Cluster(root, conf, jobcomp)
    try:
        _start(cluster, ["munged", "-F", "--force", f"--socket={munge_socket}",
                         f"--key-file={key}", f"--pid-file={root}/munge/munged.pid",
                         f"--log-file={root}/munge/munged.log",
                         f"--seed-file={root}/munge/munged.seed"], root / "munged.out")
        _wait("the munge socket", munge_socket.exists, cluster, 20)
        _start(cluster, ["slurmctld", "-D", "-i", "-f", str(conf)], root / "slurmctld.out")
        _start(cluster, ["slurmd", "-D", "-N", "localhost", "-f", str(conf)], root / "slurmd.out")
        _wait("an idle node", lambda: node_state(cluster) == "idle", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


REPO = Path(__file__).resolve().parents[2]


def manylab(*args: str, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `manylab` command (as a user would, in the clone)."""
    import sys

    result = subprocess.run([sys.executable, "-m", "manylab.cli", *args], cwd=REPO,
                            capture_output=True, text=True, check=False, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"manylab {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


ACTIVE = (PointState.PENDING, PointState.RUNNING)


def wait_states(study_dir: Path, until: object = None,
                timeout: float = 600) -> dict[str, PointState]:
    """Poll the scheduler's view until `until(states)` holds (default: nothing queued/running)."""
    check = until if callable(until) else (
        lambda s: s and not any(v in ACTIVE for v in s.values()))
    deadline = time.monotonic() + timeout
    states: dict[str, PointState] = {}
    while time.monotonic() < deadline:
        states = SlurmScheduler().states(study_dir)
        if check(states):
            return states
        time.sleep(1)
    raise AssertionError(f"timed out waiting on {study_dir}: {states}")


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGINT, _exit)  # also when started in the background of a script
    started = start()
    print(f"export SLURM_CONF={started.conf}")
    print("pids: " + " ".join(str(p.pid) for p in started.processes))
    try:
        signal.pause()
    finally:
        started.stop()
        print(f"stopped; logs in {started.root}")
