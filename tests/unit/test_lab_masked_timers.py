"""A lab node masks the host's timers it has no use for (issue 37 item 4: the lab tier's CPU).

A node's root is an overlay of the host's, and its target pulls in basic.target, so every timer the host's packages
enable in ``/etc/systemd/system/timers.target.wants`` ran in every node: on the machines that run this suite (and
on any with ``scripts/system-deps.sh``'s prometheus-node-exporter) its collectors' timers fire at boot
(``OnBootSec=0``: apt_info.py, smartmon, nvme) and two of them every minute, in each node of each lab.
apt's two timers stay: the fm-restarters scenario runs them and a repair's quiesce stops and starts them.
"""

from __future__ import annotations

from nvls_tui.lab.image import KEPT_TIMERS, masked_links, unit_files

HOST = ["apt-daily-upgrade.timer", "apt-daily.timer", "dpkg-db-backup.timer", "man-db.timer",
        "prometheus-node-exporter-apt.timer", "prometheus-node-exporter-ipmitool-sensor.timer"]


def test_the_hosts_timers_but_apts_are_masked_to_dev_null():
    links = masked_links(HOST)
    assert links == {f"/etc/systemd/system/{t}": "/dev/null" for t in
                     ("dpkg-db-backup.timer", "man-db.timer", "prometheus-node-exporter-apt.timer",
                      "prometheus-node-exporter-ipmitool-sensor.timer")}
    assert set(KEPT_TIMERS) == {"apt-daily.timer", "apt-daily-upgrade.timer"}


def test_the_labs_own_units_and_what_is_no_timer_are_never_masked():
    own = list(unit_files(["/dev/nvidia0"]))
    assert "nvidia-snapshot.timer" in own
    assert masked_links([*own, "ssh.service", "uuidd.socket", "README"]) == {}
