#!/bin/sh
# Run a command on a machine that looks, to it, like one with an NVIDIA driver: /dev/nvidiactl and
# /dev/nvidia0 exist (plain files) in a private mount namespace, and nowhere else. The real /dev is
# never written: a tmpfs over /dev in the namespace holds the host's entries (bound one by one) and
# the two files. Root only (unshare -m).
#
#   scripts/with-host-gpu-devices.sh .venv/bin/python -m pytest -m ssh      # the SSH tier on such a host
#
# Tests must not read the host's devices (issue 37): run under this, the suite reads the same.
if [ -z "$NVLS_GPU_DEVICES_INSIDE" ]; then
  [ "$(id -u)" = 0 ] || { echo "$0: needs root (unshare -m)" >&2; exit 2; }
  NVLS_GPU_DEVICES_INSIDE=1 exec unshare --mount --propagation private sh "$0" "$@"
fi
set -e
T=$(mktemp -d "${TMPDIR:-/tmp}/nvls-gpu-dev.XXXXXX")
mkdir "$T/host"
mount --rbind /dev "$T/host"
mount -t tmpfs -o mode=755 tmpfs /dev
for e in "$T"/host/* "$T"/host/.[!.]*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  n=/dev/${e##*/}
  if [ -L "$e" ]; then cp -P "$e" "$n"
  elif [ "$n" = /dev/ptmx ]; then ln -s pts/ptmx /dev/ptmx   # the bound pts' own multiplexer
  elif [ -d "$e" ]; then mkdir "$n"; mount --rbind "$e" "$n"
  else touch "$n"; mount --bind "$e" "$n"; fi
done
umount -l "$T/host"
rmdir "$T/host" "$T"
for f in nvidiactl nvidia0; do touch "/dev/$f"; chmod 666 "/dev/$f"; done
unset NVLS_GPU_DEVICES_INSIDE
exec "$@"
