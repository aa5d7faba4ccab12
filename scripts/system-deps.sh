#!/usr/bin/env bash
# Debian packages the test suite needs: OpenSSH's sshd (the real server the SSH tests talk to) and tmux
# (the end-to-end terminal test). Installed only when missing.
set -euo pipefail
need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q "${need[@]}" >/dev/null
}
