#!/usr/bin/env bash
# Debian packages the test suite needs: OpenSSH's sshd (the real server the SSH tests talk to), tmux
# (the end-to-end terminal tests), and the real tools the simulator is checked against and the
# real-process node runs (procps ps/kill/watch, psmisc fuser, util-linux unshare), the lab's
# containers (systemd-container's systemd-nspawn booting the host's own systemd), and the lab's Slurm
# cluster (`lab up --slurm`: slurm-wlm's slurmctld and slurmd, slurm-client's scontrol/sinfo/squeue/
# sbatch/scancel/srun, munge's munged), systemd-journal-remote (writes real journal files that the
# kernel-log and paste tests read back with the real journalctl), lsof (a holders source), faketime's
# libfaketime (a second bastion whose clock runs minutes ahead, for the lock's tests), and a
# kubectl for the Kubernetes tests (the real client against the stand-in API server; Debian's
# kubernetes-client, 1.20, where the machine image carries none), and the monitoring stack the
# metrics are checked against (issue 39): Prometheus 2.42 with promtool (`promtool check metrics`,
# `check rules`, `test rules`, and a real server scraping), node_exporter 1.5 (its textfile collector
# reads `check --metrics-textfile`), and Alertmanager (the rules' receiver). Installed only when missing.
set -euo pipefail
need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v ps >/dev/null 2>&1 && command -v watch >/dev/null 2>&1 || need+=(procps)
command -v fuser >/dev/null 2>&1 || need+=(psmisc)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
[ -x /lib/systemd/systemd ] || need+=(systemd)
[ -x /lib/systemd/systemd-journal-remote ] || need+=(systemd-journal-remote)
command -v lsof >/dev/null 2>&1 || need+=(lsof)
command -v faketime >/dev/null 2>&1 || need+=(faketime)
command -v kubectl >/dev/null 2>&1 || need+=(kubernetes-client)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || need+=(prometheus-node-exporter)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
{ command -v slurmctld || [ -x /usr/sbin/slurmctld ]; } >/dev/null 2>&1 \
    && { command -v slurmd || [ -x /usr/sbin/slurmd ]; } >/dev/null 2>&1 || need+=(slurm-wlm)
for tool in scontrol sinfo squeue sbatch scancel srun; do
    command -v "$tool" >/dev/null 2>&1 || { need+=(slurm-client); break; }
done
{ command -v munged || [ -x /usr/sbin/munged ]; } >/dev/null 2>&1 && command -v munge >/dev/null 2>&1 || need+=(munge)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q "${need[@]}" >/dev/null
}
