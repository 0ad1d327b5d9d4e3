# Shared by scripts/k8s-up and scripts/k8s-down (sourced, not run). Everything a run makes is
# recorded in its state dir, so k8s-down undoes exactly what k8s-up did and nothing else.

K8S_VERSION="${K8S_VERSION:-1.37.2}"
K8S_CACHE="${K8S_CACHE:-/var/cache/sandbox-broker/k8s}"
K8S_DEFAULT_STATE="${K8S_STATE_DIR:-/tmp/sandbox-broker-k8s}"

# sysctls kubelet sets at start (no setting stops it): saved before, restored by k8s-down
K8S_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
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
