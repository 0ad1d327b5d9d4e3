#!/bin/bash
# Runs as root inside a throw-away container of the base image (`docker run -i --network none
# BASE bash -s < setup.sh`); the container is then `docker commit`ed, so the multiuser image is
# the base layer plus one thin layer with these changes. Offline.
#
# The seats: Linux users sbu1..sbuN (uid/gid 20001..2000N, own group each), home /home/sbuN
# mode 0700, so one seat cannot read another's files. The broker runs a seat's commands with the
# Docker exec `User` field (e.g. "sbu3"), not with sudo: sandboxes run with no-new-privileges,
# which makes setuid sudo useless inside them anyway.
set -euo pipefail
SEATS="${SEATS:-16}"

for ((i = 1; i <= SEATS; i++)); do
    u="sbu$i"; id=$((20000 + i))
    groupadd --gid "$id" "$u"
    # -l: no lastlog/faillog entries (sparse files sized by the uid)
    useradd --uid "$id" --gid "$id" --create-home --home-dir "/home/$u" \
            --shell /bin/bash --no-log-init "$u"
    chmod 0700 "/home/$u"
    passwd -l "$u" >/dev/null   # no password: nobody logs in, the broker execs as the user
done
chmod 0755 /home

# Sudo rules: only root may act as a seat (it can anyway; this documents the intent and lets a
# root shell in the sandbox use `sudo -u sbuN` when no-new-privileges is off). Seats get no
# sudo rights at all: that would let one seat read another's home.
{
    echo "# sandbox-broker: root may run commands as any seat user, without a password."
    printf 'Runas_Alias SANDBOX_SEATS = %s\n' "$(seq -s, -f 'sbu%g' 1 "$SEATS")"
    echo "root ALL=(SANDBOX_SEATS) NOPASSWD: ALL"
} >/etc/sudoers.d/sandbox-broker
chmod 0440 /etc/sudoers.d/sandbox-broker
visudo -cq -f /etc/sudoers.d/sandbox-broker

# /workspace stays root-owned 0755 as in the base image: seats work in their private homes
install -d -m 0755 -o root -g root /workspace
rm -f /var/log/*.log /etc/*-  # useradd's backups of passwd/group/shadow
