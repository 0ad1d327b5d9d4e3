#!/bin/bash
# Runs inside the freshly debootstrapped rootfs (`chroot ROOT /bin/bash -s`), before it is
# tarred and `docker import`ed. Offline: no apt-get here (packages come from ./packages).
set -euo pipefail

# the sandbox's working directory (image WORKDIR); user_shared sessions get /workspace/<session>
install -d -m 0755 -o root -g root /workspace

# like debian:bookworm-slim: no man pages, info, docs (but the copyright files) or translations,
# now or for packages installed later (~70 MB of the ~290 MB rootfs)
cat >/etc/dpkg/dpkg.cfg.d/sandbox-broker-slim <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
find /usr/share/doc -mindepth 1 ! -name copyright ! -type d -delete
find /usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf /usr/share/man/* /usr/share/groff/* /usr/share/info/* /usr/share/lintian/* /usr/share/linda/*
find /usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +

# no leftovers of the build: downloaded .debs, apt lists, logs
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log /var/log/apt/* \
       /var/cache/debconf/*-old /var/lib/dpkg/*-old
# the build host's name must not leak into the image; Docker bind-mounts its own files
: >/etc/hostname
rm -f /etc/resolv.conf
