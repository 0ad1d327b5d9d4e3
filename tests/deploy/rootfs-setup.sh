#!/bin/bash
# Runs once in the freshly debootstrapped deploy-test rootfs (chroot), before it is cached.
set -euo pipefail
# A container shares the host network (no --private-network): nothing may bind the host's
# ports at boot. The site of nginx is the broker's (installed by `make install`), not Debian's.
rm -f /etc/nginx/sites-enabled/default
# Debian's own Squid would take port 3128 of the host; the broker runs its own (sandbox-broker-squid).
systemctl mask squid.service >/dev/null 2>&1 || true
# No login prompts on the container console; the test drives it with nsenter.
systemctl mask console-getty.service getty@tty1.service >/dev/null 2>&1 || true
# Persistent journal, so `journalctl` in the container reads the whole boot.
mkdir -p /var/log/journal
echo deploy-test >/etc/hostname
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
