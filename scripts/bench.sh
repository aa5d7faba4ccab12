#!/usr/bin/env bash
# `make bench`: install the anchor tools if missing, then run the benchmark (bench/README.md).
#   BENCH_SIZES=64,256,1024  BENCH_REPS=3  BENCH_ARGS="--tools nvls-tui bare"  BENCH_UI=1 (also the Pilot UI benchmark)
#   BENCH_NODE=1 (what one poll costs the node)  BENCH_NODE_ARGS="--kinds static,local --runs 5"
# Loopback only; every sshd the run starts is stopped by PID when it ends (also on error).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v pdsh >/dev/null 2>&1 || need_apt+=(pdsh)
[ -x /usr/bin/time ] || need_apt+=(time)          # GNU time measures each client's CPU and peak RSS
[ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1 || need_apt+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "bench: installing ${need_apt[*]} (Debian packages)"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# clush comes with ClusterShell, already a dependency of nvls-tui in .venv.
[ -x .venv/bin/clush ] || .venv/bin/python -m pip install -q ClusterShell

# ansible-core and parallel-ssh live in a venv of their own, so the project's venv stays clean.
ANCHORS=bench/.venv-anchors
base() { "$1" -c 'import sys; print(sys._base_executable)'; }
if [ -x "$ANCHORS/bin/python" ] && [ "$(base "$ANCHORS/bin/python")" != "$(base .venv/bin/python)" ]; then
    rm -rf "$ANCHORS"   # made with another interpreter than .venv: the Python clients run on one build of CPython
fi
if [ ! -x "$ANCHORS/bin/ansible" ] || ! "$ANCHORS/bin/python" -c 'import pssh' 2>/dev/null; then
    echo "bench: installing ansible-core and parallel-ssh into $ANCHORS"
    [ -x "$ANCHORS/bin/python" ] || "$(base .venv/bin/python)" -m venv "$ANCHORS"   # .venv's interpreter
    "$ANCHORS/bin/python" -m pip install -q ansible-core parallel-ssh
fi

status=0
# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
.venv/bin/python -m bench.run ${BENCH_ARGS:-} || status=$?
.venv/bin/python -m bench.audit_bench || status=$?
.venv/bin/python -m bench.metrics_bench || status=$?   # issue 39: the textfile after a 1,024-node round
if [ "${BENCH_NODE:-1}" = "1" ]; then
    # What one poll costs the node (bench/node_cost.py); its lab part says why it is skipped when not root.
    # shellcheck disable=SC2086 # BENCH_NODE_ARGS is a list of options
    .venv/bin/python -m bench.node_cost --out bench/results ${BENCH_NODE_ARGS:-} || status=$?
fi
if [ "${BENCH_UI:-1}" = "1" ]; then
    .venv/bin/python -m bench.ui_bench || status=$?
fi
exit $status
