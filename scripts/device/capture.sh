#!/usr/bin/env bash
# Read-only capture on a lent GPU machine (the device tool): what real tools print there, the probe run
# by hand with CUDA processes as holders, and nvls-tui's check through NVML and over SSH to 127.0.0.1.
# Never resets, never changes a unit or a GPU setting, never uses NVLink multicast.
#   bash scripts/device/capture.sh OUTDIR [label]
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${1:?OUTDIR}; LABEL=${2:-h200}
C="$OUT/$LABEL"; mkdir -p "$C"
cd "$(dirname "$0")/../.."
if [ -d .whl ] && [ -z "${NO_WHL:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        >"$C/pip.log" 2>&1 || echo "pip install failed (see pip.log)"
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
# run NAME CMD...: stdout to NAME.out, stderr to NAME.err, exit status to NAME.rc (each command's own)
run() { local n=$1; shift; "$@" >"$C/$n.out" 2>"$C/$n.err"; echo $? >"$C/$n.rc"; }
shrun() { local n=$1; shift; sh -c "$1" >"$C/$n.out" 2>"$C/$n.err"; echo $? >"$C/$n.rc"; }

{ date -u; uname -a; cat /etc/os-release; id; nproc; python3 --version; } >"$C/env.txt" 2>&1
for t in ps fuser kill sort paste awk mawk gawk lspci journalctl systemctl dmesg sshd watch nvidia-smi \
         nv-fabricmanager setpci; do printf '%s: %s\n' "$t" "$(command -v $t || echo MISSING)"; done >"$C/tools.txt"
{ ps --version; fuser --version; } >>"$C/tools.txt" 2>&1
python3 -m pip show nvidia-ml-py psutil torch 2>/dev/null | grep -E '^(Name|Version)' >>"$C/tools.txt"

Q=index,pci.bus_id,name,uuid,driver_version,persistence_mode,fabric.state,fabric.status,fabric.cliqueId,fabric.clusterUuid,fabric.health.summary
run smi nvidia-smi
run smi-q nvidia-smi -q
run smi-q-x nvidia-smi -q -x
run query-probe nvidia-smi --query-gpu=$Q --format=csv
run query-nohealth nvidia-smi --query-gpu=${Q%,fabric.health.summary} --format=csv
run query-health-all nvidia-smi --query-gpu=index,fabric.state,fabric.status,fabric.health.summary,fabric.health.bandwidth,fabric.health.route_recovery_in_progress,fabric.health.route_unhealthy,fabric.health.access_timeout_recovery,fabric.health.incorrect_configuration,fabric.health.partition_assigned --format=csv
run query-bogus nvidia-smi --query-gpu=index,fabric.no_such_field --format=csv
run topo nvidia-smi topo -m
run nvlink nvidia-smi nvlink -s
run smi-L nvidia-smi -L
run lspci lspci -D -d 10de:22a3
run lspci-all lspci -D -nn -d 10de:
shrun ls-dev 'ls -l /dev/nvidia*'
shrun sysfs-pci 'for d in /sys/bus/pci/devices/*; do v=$(cat $d/vendor); [ "$v" = 0x10de ] && echo "$(basename $d) $(cat $d/class) $(cat $d/device)"; done'
run journal-k journalctl -k -b --no-pager -o short-iso
run systemctl-show systemctl show --no-pager -p Id,LoadState,ActiveState,SubState,MainPID,Result,ActiveEnterTimestamp nvidia-fabricmanager.service kubelet.service
run fm-version nv-fabricmanager --version
shrun dmesg-nv 'dmesg 2>&1 | grep -E "NVRM|nvidia|Xid|FABRIC" | tail -n 40'

# Holders: one CUDA process per GPU (torch), and a watch loop where watch exists.
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
for i in $(seq 0 $((N - 1))); do
    CUDA_VISIBLE_DEVICES=$i python3 -c 'import torch,time; x=torch.ones(1024, device="cuda"); torch.cuda.synchronize(); time.sleep(900)' &
done
command -v watch >/dev/null && { watch -n 1 nvidia-smi >/dev/null 2>&1 & }
for _ in $(seq 1 120); do
    [ "$(fuser /dev/nvidia* 2>/dev/null | wc -w)" -ge "$N" ] && break; sleep 0.5
done
sleep 2
shrun fuser-v 'fuser -v /dev/nvidia* 2>&1'
shrun fuser-terse 'fuser /dev/nvidia*'
PIDS=$(fuser /dev/nvidia* 2>/dev/null | tr -s ' ' '\n' | grep -E '^[0-9]+' | sed 's/[^0-9]//g' | sort -un | paste -sd, -)
echo "$PIDS" >"$C/holder-pids.txt"
shrun ps-ppid-raw "ps -o ppid= -p $PIDS | od -c | head -20"
shrun ps-ppid-paste "ps -o ppid= -p $PIDS | sort -un | paste -sd, -"
shrun ps-holders "ps -ww -o pid=,ppid=,user:32=,lstart=,cgroup=,args= -p $PIDS"
shrun proc-cgroup "for p in \$(echo $PIDS | tr , ' '); do echo \"== \$p\"; cat /proc/\$p/cgroup; cat /proc/\$p/stat; echo; ls -l /proc/\$p/fd 2>/dev/null | grep nvidia; done"
python3 - >"$C/nvml.out" 2>"$C/nvml.err" <<'PY'
import ctypes, pynvml
from nvls_tui.backends.local import read_nvml
pynvml.nvmlInit()
print("driver", pynvml.nvmlSystemGetDriverVersion(), "nvml", pynvml.nvmlSystemGetNVMLVersion())
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    info = pynvml.c_nvmlGpuFabricInfo_v3_t()
    try:
        pynvml.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
        print(i, "fabric v3: state", info.state, "status", info.status, "cliqueId", info.cliqueId,
              "clusterUuid", bytes(info.clusterUuid).hex(), "healthMask", hex(info.healthMask),
              "healthSummary", getattr(info, "healthSummary", None))
    except pynvml.NVMLError as exc:
        print(i, "fabric v3 error:", exc)
    print(i, "bus", pynvml.nvmlDeviceGetPciInfo(h).busId, "uuid", pynvml.nvmlDeviceGetUUID(h))
pynvml.nvmlShutdown()
print(read_nvml())
PY
run check-local python3 -m nvls_tui.cli check local --json
# SSH to this machine: a real sshd if there is one, else a small asyncssh server.
S=/tmp/nvls-ssh; PORT=2222
python3 scripts/device/loopback_ssh.py $S $PORT >"$C/sshd.log" 2>&1 &
for _ in $(seq 1 100); do [ -f $S/ready ] && break; sleep 0.1; done
run check-ssh python3 -m nvls_tui.cli check root@127.0.0.1:$PORT --known-hosts $S/known_hosts -i $S/client_key --ssh-config $S/ssh_config --json
run check-ssh-plain python3 -m nvls_tui.cli check root@127.0.0.1:$PORT --known-hosts $S/known_hosts -i $S/client_key --ssh-config $S/ssh_config
python3 scripts/device/compare_checks.py "$C/check-local.out" "$C/check-ssh.out" >"$C/agree.txt" 2>&1
python3 - >"$C/probe-new.sh" <<'PY'
from nvls_tui.poll.probe_script import probe_script
print(probe_script(nonce="device"), end="")
PY
run probe-new sh "$C/probe-new.sh"
run console-shot python3 scripts/device/console_shot.py "$C/console" root@127.0.0.1:$PORT $S/known_hosts $S/client_key $S/ssh_config
[ -n "${EXTRA:-}" ] && eval "$EXTRA"
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
tar -C "$OUT" -czf "$OUT/$LABEL.tar.gz" "$LABEL" && rm -rf "$C"
echo "captured into $OUT/$LABEL.tar.gz"
