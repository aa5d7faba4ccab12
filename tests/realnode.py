"""A node of real processes: its own PID and mount namespace, real holders, a real sshd inside.

Only what this machine has no hardware for is a stand-in: ``/dev/nvidia*`` are plain files on a
private tmpfs ``/dev`` (the holders really open them), and ``nvidia-smi``, ``nv-fabricmanager``,
``systemctl``, ``journalctl`` and ``lspci`` answer from a simulated HGX H100 node (nvidia-smi ``-r``
refuses while the real ``fuser`` sees any holder). ``ps``, ``fuser``, ``kill``, ``awk``, ``id``,
``watch`` and the shell are the real ones, as are the PIDs (a PID namespace whose ``pid_max`` is
2^22, as on real GPU hosts), start times, parents, users, cgroups (real v1 and v2 cgroups, the
GPU Operator pod in a ``kubepods`` path longer than procps's 27-character column) and signals.

Root only (``unshare -m -p``, cgroups); the tests skip elsewhere. ``RealNode.stop`` kills the
namespace's init, which takes every process of the node with it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import LOOPBACK, PORT_ATTEMPTS, SshdRig, _banner, find_sshd

GPUS = 8
OPERATOR = "operator1"  # a non-root login that exists only inside the node
DEVICES = ([f"/dev/nvidia{i}" for i in range(GPUS)] + ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
           "/dev/nvidia-modeset", "/dev/nvidia-nvlink", "/dev/nvidia-nvswitchctl"]
           + [f"/dev/nvidia-nvswitch{i}" for i in range(4)])
# The real H200's /dev (tests/fixtures/real/nvidia-h200/ls-l-dev-nvidia.txt) has no nvidia-modeset,
# nvidia-nvlink or nvidia-nvswitchctl: a node shaped like it.
H200_ABSENT = ("/dev/nvidia-modeset", "/dev/nvidia-nvlink", "/dev/nvidia-nvswitchctl")
POD_UID = "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"
POD_CGROUP = ("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
              f"{POD_UID.replace('-', '_')}.slice/cri-containerd-{'0123456789abcdef' * 4}.scope")
DCGM_CGROUP = "system.slice/nvidia-dcgm.service"
CGROUP_ROOTS = ("/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified")
WORKLOAD_ARGS = ["train.py", "--epochs", "90", "--data", "/datasets/imagenet-21k/train", "--batch-size", "4096",
                 "--checkpoint-dir", "/scratch/ckpt/resnet152-bf16-run-20261201"]

# nvidia-smi as the node's only NVIDIA tool that must see the real processes: it holds every GPU file
# while it runs (a watch loop's child is a holder), and `-r` is refused while fuser sees any holder.
NVIDIA_SMI = """#!/bin/sh
echo "$*" >> {log} 2>/dev/null  # only root's calls are logged (the log is the test's)
exec 3<>/dev/nvidia0 4<>/dev/nvidia1 5<>/dev/nvidia2 6<>/dev/nvidia3 7<>/dev/nvidia4 8<>/dev/nvidia5 \\
     9<>/dev/nvidia6
case "$*" in
  "") sleep 0.8 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; exec {sim};;  # ~1 s on eight real GPUs, holding them
  -r|--gpu-reset)
    if fuser -s /dev/nvidia* 2>/dev/null; then
      echo "8 devices are currently being used by one or more other processes (e.g., Fabric Manager, CUDA"
      echo "application, graphics application such as an X server, or a monitoring application such as another"
      echo "instance of nvidia-smi). Please first kill all processes using these devices and all compute"
      echo "applications running in the system."
      exit 255
    fi
    echo "All done."; exit 0;;
  *) exec {sim} "$@";;
esac
"""

# PID 1 of the node: starts the holders and sshd, reaps, writes who is who, ends everything on SIGTERM.
INIT = r'''
import json, os, pty, signal, subprocess, sys, time
root, sshd, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
env = {"PATH": os.environ["PATH"], "LC_ALL": "C", "HOME": "/root"}
present = json.loads(os.environ["NODE_DEVICES"])
def held(name, files):
    # `<>` would create a file the node lacks: a holder opens only what exists, as a real one does.
    fds = " ".join(f"{3 + i}<>{f}" for i, f in enumerate(f for f in files if f in present))
    return subprocess.Popen(["bash", "-c", f"exec {fds}; exec -a {name} sleep infinity"], env=env)
def into(pid, cgroup):
    for base in json.loads(os.environ["CGROUP_ROOTS"]):
        os.makedirs(f"{base}/{cgroup}", exist_ok=True)
        with open(f"{base}/{cgroup}/cgroup.procs", "w") as fh:
            fh.write(str(pid))
gpus = [f"/dev/nvidia{i}" for i in range(8)]
procs = {}
idle = os.environ.get("NODE_IDLE") == "1"
wpid, wfd = 0, -1
if not idle:  # an idle node: no process holds a device
    procs["dcgm-exporter"] = held("/usr/bin/dcgm-exporter", gpus + ["/dev/nvidiactl"])
    into(procs["dcgm-exporter"].pid, os.environ["POD_CGROUP"])
    procs["nv-hostengine"] = held("/usr/bin/nv-hostengine", gpus + ["/dev/nvidiactl", "/dev/nvidia-nvswitchctl"])
    into(procs["nv-hostengine"].pid, os.environ["DCGM_CGROUP"])
    workload = ("import os, time; fs = [os.open(p, os.O_RDWR) for p in ('/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2',"
                " '/dev/nvidia3', '/dev/nvidiactl', '/dev/nvidia-uvm')]; os.setgid(65534); os.setuid(65534); time.sleep(1e9)")
    procs["workload"] = subprocess.Popen(["python3", "-c", workload, *json.loads(os.environ["WORKLOAD_ARGS"])], env=env)
    # An operator's forgotten `watch -n 1 nvidia-smi`: watch wants a terminal, so it gets a pseudo-terminal
    # whose screen PID 1 keeps reading (a full terminal buffer would stop it).
    wpid, wfd = pty.fork()
    if wpid == 0:
        os.execvpe("watch", ["watch", "-n", "1", "nvidia-smi"], {**env, "TERM": "xterm"})
    os.set_blocking(wfd, False)
daemons = [subprocess.Popen([sshd, "-D", "-e", "-f", c], stdin=subprocess.DEVNULL,
                            stdout=open(f"{root}/sshd.log", "ab"), stderr=subprocess.STDOUT) for c in configs]
with open(f"{root}/pids.json.tmp", "w") as fh:
    json.dump({**{k: p.pid for k, p in procs.items()}, **({"watch": wpid} if wpid else {})}, fh)
os.rename(f"{root}/pids.json.tmp", f"{root}/pids.json")
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
while not stop:
    try:
        os.waitpid(-1, os.WNOHANG)  # PID 1 reaps whatever the node's sessions leave behind
    except ChildProcessError:
        pass
    try:
        if wfd >= 0:
            os.read(wfd, 65536)
    except OSError:
        pass
    time.sleep(0.05)
'''

SETUP = """set -e
R={root}
mkdir -p $R/hostdev
mount --bind /dev $R/hostdev
mount -t tmpfs -o mode=755 tmpfs /dev
for d in null zero full random urandom tty; do touch /dev/$d; mount --bind $R/hostdev/$d /dev/$d; done
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
for f in {devices}; do touch $f; chmod 666 $f; done  # crw-rw-rw- on real nodes too
mkdir -p /run/sshd
# An operator account that is not root (the probe then cannot vouch for other users' processes).
for f in passwd group shadow; do cp /etc/$f $R/$f; done
echo "{user}:x:4242:4242:non-root operator:/tmp:/bin/sh" >> $R/passwd
echo "{user}:x:4242:" >> $R/group
echo "{user}:*:20228:0:99999:7:::" >> $R/shadow
for f in passwd group shadow; do mount --bind $R/$f /etc/$f; done
# sshd reads authorized_keys as the user logging in: a copy operator1 may read, on the private /dev.
cp {keys} /dev/.nvls-authorized-keys && chmod 644 /dev/.nvls-authorized-keys
exec {python} $R/init.py $R {sshd} {configs}
"""


def _curated_bin(target: Path, leave_out: set[str]) -> None:
    """Symlinks to every executable of /usr/bin and /bin but ``leave_out``: a node without those tools."""
    for folder in ("/usr/bin", "/bin"):
        for entry in os.scandir(folder):
            if entry.name in leave_out or (target / entry.name).exists() or (target / entry.name).is_symlink():
                continue
            if os.access(entry.path, os.X_OK):
                (target / entry.name).symlink_to(entry.path)


def available() -> str | None:
    """Why a RealNode cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (unshare -m -p, cgroups)"
    if find_sshd() is None or shutil.which("unshare") is None or shutil.which("fuser") is None:
        return "needs openssh-server, util-linux unshare and psmisc fuser"
    if not all(os.path.isdir(base) for base in CGROUP_ROOTS):
        return "needs cgroup v1 name=systemd and v2 hierarchies mounted"
    return None


class RealNode:
    """One node of real processes reached over a real sshd, on one or more ports.

    Args:
        root: an empty directory for keys, configs and the stand-ins.
        variants: port name -> tools the node lacks on that port (``{"full": set(), "no-fuser": {"fuser"}}``).
        absent: device files of :data:`DEVICES` the node lacks (:data:`H200_ABSENT`: the real H200's /dev).
        idle: start no holder (no pod, DCGM, workload or watch loop): nothing holds a device.
        homes: port name -> a HOME of its own for that port's login (its ``.bashrc`` is read).

    Attributes:
        rig: the sshd configuration (keys, known_hosts, targets) of every port.
        pids: the holders' PIDs as the node sees them (``dcgm-exporter``, ``nv-hostengine``,
            ``workload``, ``watch``).
    """

    def __init__(self, root: Path, variants: dict[str, set[str]], *, absent: tuple[str, ...] = (),
                 idle: bool = False, homes: dict[str, Path] | None = None) -> None:
        self.root = Path(root)
        self.variants = variants
        self.devices = [d for d in DEVICES if d not in absent]
        self.idle = idle
        self.pids: dict[str, int] = {}
        self._init: subprocess.Popen | None = None
        tails = {name: ("" if tools else ":/usr/bin:/bin") for name, tools in variants.items()}
        # homes: a port whose login has a HOME of its own (its shells read that ~/.bashrc: SshdRig's homes).
        self.rig = SshdRig(self.root / "ssh", list(variants), self._populate, path_tails=tails, homes=homes)

    def _populate(self, name: str, node_dir: Path) -> None:
        write_shims(node_dir, "healthy", "hgx01", static=True)
        shutil.rmtree(node_dir / "proc")  # the real processes' /proc answers (no NVLS_TUI_PROC for this node)
        for tool in ("ps", "fuser", "find", "kill", "pgrep", "pkill", "hostname", "sudo"):
            (node_dir / "bin" / tool).unlink(missing_ok=True)  # the real ones
        for tool in self.variants[name]:
            (node_dir / "bin" / tool).unlink(missing_ok=True)
        sim = node_dir / "bin" / "nvidia-smi"
        sim.rename(node_dir / "bin" / ".nvidia-smi-sim")
        sim.write_text(NVIDIA_SMI.format(log=self.root / "nvidia-smi.log", sim=node_dir / "bin" / ".nvidia-smi-sim"))
        sim.chmod(0o755)
        if self.variants[name]:
            _curated_bin(node_dir / "bin", set(self.variants[name]))

    def start(self, wait: float = 30.0) -> RealNode:
        """Boot the namespace, its holders and sshd; wait until every port answers as this node.

        A port another process took before sshd bound it (see ``SshdRig.start``) boots the node
        again on fresh ports, a few times at most.
        """
        self.rig.prepare()
        # operator1 must reach the node's tools: let others traverse (only traverse) the test's folders.
        for folder in [self.root, *self.root.parents]:
            if folder == Path("/"):
                break
            folder.chmod(folder.stat().st_mode | 0o111)
        for _attempt in range(PORT_ATTEMPTS):
            if self._boot(wait):
                return self
            self.stop()
            self.rig.assign_ports()
        raise RuntimeError(f"the real node's ports kept being taken by other processes: {self._sshd_log()}")

    def _sshd_log(self) -> str:
        try:
            return (self.root / "sshd.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _boot(self, wait: float) -> bool:
        """One boot on the rig's current ports: False when sshd could not bind one of them."""
        for leftover in ("pids.json", "sshd.log"):  # an earlier boot's, which would read as this one's
            (self.root / leftover).unlink(missing_ok=True)
        for config in self.rig.configs:
            text = config.read_text().replace(f"AuthorizedKeysFile {self.rig.authorized_keys}",
                                              f"AuthorizedKeysFile {self.rig.authorized_keys} /dev/.nvls-authorized-keys")
            config.write_text(text)
        (self.root / "init.py").write_text(INIT)
        bin_dir = next(iter(self.rig.nodes.values())).bin
        env = {**os.environ, "NODE_DEVICES": json.dumps(self.devices), "NODE_IDLE": "1" if self.idle else "0",
               "POD_CGROUP": POD_CGROUP,
               "DCGM_CGROUP": DCGM_CGROUP, "CGROUP_ROOTS": json.dumps(CGROUP_ROOTS),
               "WORKLOAD_ARGS": json.dumps(WORKLOAD_ARGS), "PATH": f"{bin_dir}:/usr/bin:/bin"}
        setup = SETUP.format(root=self.root, devices=" ".join(self.devices), python=sys.executable, sshd=self.rig.sshd,
                             configs=" ".join(str(c) for c in self.rig.configs), user=OPERATOR,
                             keys=self.rig.authorized_keys)
        self._init = subprocess.Popen(["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private",
                                       "sh", "-c", setup], env=env, stdin=subprocess.DEVNULL,
                                      stdout=open(self.root / "node.log", "ab"), stderr=subprocess.STDOUT,
                                      start_new_session=True)
        deadline = time.monotonic() + wait
        ports = [n.port for n in self.rig.nodes.values()]
        while not ((self.root / "pids.json").exists() and all(_banner(p) for p in ports)
                   and self.rig.owned_ports() >= set(ports)):
            if "Bind to port" in self._sshd_log():
                return False
            if self._init.poll() is not None or time.monotonic() > deadline:
                log = (self.root / "node.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"the real node did not come up: {log}")
            time.sleep(0.05)  # polling a child's ports and a file it writes: bounded by the deadline
        self.pids = json.loads((self.root / "pids.json").read_text())
        return True

    def stop(self) -> None:
        """End the namespace (its PID 1 takes every process of the node with it) and its cgroups."""
        if self._init is not None and self._init.poll() is None:
            os.killpg(self._init.pid, signal.SIGKILL)
            self._init.wait(timeout=10)
        for base in CGROUP_ROOTS:
            for cgroup in (POD_CGROUP, DCGM_CGROUP):
                parts = cgroup.split("/")
                for depth in range(len(parts), 0, -1):
                    try:
                        os.rmdir(f"{base}/{'/'.join(parts[:depth])}")
                    except OSError:
                        break

    def nvidia_smi_calls(self) -> list[str]:
        """Every argument line the node's nvidia-smi was called with, in order."""
        log = self.root / "nvidia-smi.log"
        return log.read_text().splitlines() if log.exists() else []

    def target(self, variant: str, user: str = "root") -> str:
        """``USER@127.0.0.1:PORT`` of one variant (``OPERATOR`` for a non-root login)."""
        return f"{user}@{LOOPBACK}:{self.rig.nodes[variant].port}"


__all__ = ["H200_ABSENT", "OPERATOR", "POD_UID", "RealNode", "WORKLOAD_ARGS", "available"]
