# Shared by scripts/k8s-up and scripts/k8s-down (sourced, not run). Everything a run makes is
# recorded in its state dir, so k8s-down undoes exactly what k8s-up did and nothing else.

K8S_VERSION="${K8S_VERSION:-1.37.2}"
K8S_CACHE="${K8S_CACHE:-/var/cache/sandbox-broker/k8s}"
K8S_DEFAULT_STATE="${K8S_STATE_DIR:-/tmp/sandbox-broker-k8s}"

# sysctls kubelet sets at start (no setting stops it): saved before, restored by k8s-down
K8S_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes
    net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)
# fixed host paths the components may create despite every path setting pointing into the state
# dir (shim sockets, CNI result cache, container log symlinks, ...): those absent before start are
# removed by k8s-down (only their empty dirs and dangling links: never anything else's files)
K8S_FIXED_PATHS=(/run/containerd /var/lib/cni /var/log/containers /var/log/pods /var/lib/kubelet
    /etc/kubernetes /etc/cni /opt/cni /opt/containerd /usr/libexec/kubernetes /var/run/netns)

k8s_log() { echo "$(basename "$0"): $*" >&2; }
k8s_die() { k8s_log "error: $*"; exit 1; }

k8s_state_dir() { # STATE_DIR argument or the default, made absolute
    local d="${1:-$K8S_DEFAULT_STATE}"
    mkdir -p "$d"
    (cd "$d" && pwd -P)
}

k8s_proc_start() { # start time (clock ticks since boot) of a live PID: with the PID it names one
    local stat    # process; fails for no process or a zombie (dead, only waiting to be reaped)
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"                     # fields after "(comm) ": state is field 3, start 22
    # shellcheck disable=SC2086
    set -- $stat
    [[ "$1" != Z && "$1" != X ]] || return 1
    echo "${20}"
}

k8s_pid_alive() { # STATE NAME: the recorded process is still the one we started
    local f="$1/pids/$2" pid start
    [[ -f "$f" ]] || return 1
    read -r pid start < "$f"
    [[ -n "$pid" && "$(k8s_proc_start "$pid" 2>/dev/null)" == "$start" ]]
}

# The pod bridge's firewall (docs/KUBERNETES.md, "Pods reach nothing of the host"): two chains per
# tool (iptables, ip6tables) named for the run, jumped to from the top of INPUT and FORWARD.
#   <id>-in   (INPUT from the bridge): replies to connections the host opened (the relay's to the
#             agents, kubelet's probes) pass; everything else a pod sends to the host is dropped.
#   <id>-fwd  (FORWARD from or to the bridge): dropped, pod to pod on the bridge included (bridged
#             frames reach FORWARD through br_netfilter, bridge-nf-call-iptables=1).
# Each step is recorded in $S/firewall.created before it is made, so k8s-down undoes exactly it.
k8s_firewall_up() { # STATE BRIDGE ID
    local S="$1" br="$2" id="$3" t in fwd
    in="sbk8s-$id-in"; fwd="sbk8s-$id-fwd"
    for t in iptables ip6tables; do
        command -v "$t" >/dev/null || { [[ $t == ip6tables ]] && continue; k8s_die "$t is not installed"; }
        echo "$t $in $fwd $br" >> "$S/firewall.created"
        "$t" -w -N "$in" && "$t" -w -N "$fwd" || k8s_die "$t: could not create chains $in $fwd"
        "$t" -w -A "$in" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
        "$t" -w -A "$in" -j DROP
        "$t" -w -A "$fwd" -j DROP
        "$t" -w -I INPUT 1 -i "$br" -j "$in"
        "$t" -w -I FORWARD 1 -i "$br" -j "$fwd"
        "$t" -w -I FORWARD 1 -o "$br" -j "$fwd"
    done
}

k8s_firewall_down() { # STATE: undo what $S/firewall.created records; 1 when something is left
    local S="$1" t in fwd br c rc=0
    [[ -f "$S/firewall.created" ]] || return 0
    while read -r t in fwd br; do
        while "$t" -w -D INPUT -i "$br" -j "$in" 2>/dev/null; do :; done
        while "$t" -w -D FORWARD -i "$br" -j "$fwd" 2>/dev/null; do :; done
        while "$t" -w -D FORWARD -o "$br" -j "$fwd" 2>/dev/null; do :; done
        for c in "$in" "$fwd"; do
            "$t" -w -S "$c" >/dev/null 2>&1 || continue
            "$t" -w -F "$c" && "$t" -w -X "$c" || { k8s_log "warning: $t chain $c not removed"; rc=1; }
        done
    done < "$S/firewall.created"
    ((rc)) || rm -f "$S/firewall.created"
    return $rc
}
