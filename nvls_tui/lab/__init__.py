"""``nvls-tui lab``: simulated nodes as real machines (systemd-nspawn containers with real systemd, sshd
and processes; stand-ins only for the NVIDIA tools and the kernel's fabric log). See docs/lab.md."""
