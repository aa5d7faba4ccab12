#!/usr/bin/env bash
# Debian packages the test suite needs: OpenSSH's sshd (the real server the SSH tests talk to), tmux
# (the end-to-end terminal tests), and the real tools the simulator is checked against and the
# real-process node runs (procps ps/kill/watch, psmisc fuser, util-linux unshare), and the lab's
# containers (systemd-container's systemd-nspawn booting the host's own systemd). Installed only when
# missing.
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
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q "${need[@]}" >/dev/null
}
