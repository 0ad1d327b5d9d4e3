/* sandbox-runc: the OCI runtime the broker's sandboxes run under (dockerd
 * "runtimes" entry, HostConfig.Runtime = SANDBOX_RUNTIME). It is runc with
 * one change: the container's /proc is mounted hidepid=invisible (proc(5)),
 * so that the Linux users of a sandbox (the seats of a multi_user_shared
 * pool) see in /proc, ps and top only their own processes; root in the
 * sandbox still sees all. Docker's API has no option for the /proc mount,
 * and the broker itself needs no privilege for this.
 *
 * Invoked as runc is (containerd's shim: `sandbox-runc [global options]
 * <command> [options] <id>`). For `create` and `run` it rewrites the
 * bundle's config.json (--bundle/-b DIR, default the working directory):
 * the mount whose destination is /proc and type proc gets the option
 * hidepid=invisible (any other hidepid= option is dropped). runc passes
 * options it does not know as mount data, so the kernel (>= 5.8) sees it.
 * And the cgroup files that list the container's PIDs (cgroup.procs,
 * cgroup.threads, v1's tasks; world-readable) and /proc/locks (the PID of
 * each lock's holder) are added to linux.maskedPaths: runc binds /dev/null
 * over them, so no seat reads the others' PIDs there.
 * The file is replaced atomically (temporary file in the same directory,
 * fsync, rename). Then, for every command, it execs the real runc with the
 * same arguments. A bundle it cannot read, parse, change or write back, or
 * one without a proc mount on /proc, fails the create (exit 1): a sandbox
 * never runs unhidden. The reason goes to stderr and, as runc's own errors
 * do, to the --log file when --log-format is json: containerd reads the
 * last error there, so docker reports it ("OCI runtime create failed: ...").
 *
 * The real runc: $SANDBOX_RUNC, else a first argument --runc=PATH (daemon.json
 * "runtimeArgs"), else SANDBOX_RUNC_DEFAULT (compile time, /usr/sbin/runc:
 * Debian's runc package). Installed by scripts/docker-up and `make install`;
 * registration: docs/OPERATIONS.md "Process hiding (sandbox-runc)". */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SANDBOX_RUNC_DEFAULT
#define SANDBOX_RUNC_DEFAULT "/usr/sbin/runc"
#endif
#define HIDEPID "hidepid=invisible"

/* runc's global options and the create/run options that take a value
 * (runc --help, runc create --help); all others are flags. */
static const char *const global_valued[] = { "root", "log", "log-format", "criu", "rootless", NULL };
static const char *const create_valued[] = { "bundle", "b", "console-socket", "pid-file",
                                             "preserve-fds", NULL };

/* What die() needs: runc's --log file and whether it is JSON. */
static struct {
        const char *log_path;
        bool log_json;
} ctx;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
        char msg[PATH_MAX + 256];
        struct json_object *o;
        va_list ap;
        int fd;

        va_start(ap, fmt);
        strcpy(msg, "sandbox-runc: ");
        vsnprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s\n", msg);
        /* runc's log line: {"level":"error","msg":...,"time":...} */
        if (!ctx.log_path || !ctx.log_json)
                exit(1);
        fd = open(ctx.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        o = json_object_new_object();
        if (fd >= 0 && o && json_object_object_add(o, "level", json_object_new_string("error")) == 0 &&
            json_object_object_add(o, "msg", json_object_new_string(msg)) == 0)
                dprintf(fd, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
        exit(1);
}

/* An option as Go's flag package reads it: -name, --name, -name=v, --name=v.
 * Returns the name's length (up to '='), 0 if arg is not an option. */
static size_t opt_name(const char *arg, const char **ret_name)
{
        if (arg[0] != '-' || !arg[1] || strcmp(arg, "--") == 0)
                return 0;
        arg += arg[1] == '-' ? 2 : 1;
        *ret_name = arg;
        return strcspn(arg, "=");
}

static bool in(const char *const *names, const char *name, size_t len)
{
        for (; *names; names++)
                if (strlen(*names) == len && strncmp(*names, name, len) == 0)
                        return true;
        return false;
}

/* Index of the command (first non-option argument) in argv, or argc.
 * Notes --log and --log-format in ctx on the way. */
static int find_command(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const char *name, *value = NULL;
                size_t len = opt_name(argv[i], &name);

                if (len == 0)
                        return strcmp(argv[i], "--") == 0 ? i + 1 : i;
                if (name[len] == '=')
                        value = name + len + 1;
                else if (in(global_valued, name, len) && i + 1 < argc)
                        value = argv[++i]; /* its value is the next argument */
                if (value && len == 3 && strncmp(name, "log", 3) == 0)
                        ctx.log_path = value;
                if (value && len == 10 && strncmp(name, "log-format", 10) == 0)
                        ctx.log_json = strcmp(value, "json") == 0;
        }
        return argc;
}

/* The bundle directory of a create/run whose options start at argv[i]. */
static const char *find_bundle(int i, int argc, char **argv)
{
        for (; i < argc; i++) {
                const char *name;
                size_t len = opt_name(argv[i], &name);
                bool bundle;

                if (len == 0)
                        break; /* the container id: options end */
                bundle = in((const char *const[]){ "bundle", "b", NULL }, name, len);
                if (name[len] == '=') {
                        if (bundle)
                                return name + len + 1;
                } else if (in(create_valued, name, len)) {
                        if (++i >= argc)
                                die("option %s needs a value", argv[i - 1]);
                        if (bundle)
                                return argv[i];
                }
        }
        return ".";
}

/* Set HIDEPID on the proc mount at /proc of config. Returns false if there
 * is none or on allocation failure. */
static bool hide_proc(struct json_object *config)
{
        struct json_object *mounts, *m, *v, *opts, *kept;
        bool found = false;

        if (!json_object_object_get_ex(config, "mounts", &mounts) ||
            !json_object_is_type(mounts, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                m = json_object_array_get_idx(mounts, i);
                if (!json_object_object_get_ex(m, "destination", &v) ||
                    strcmp(json_object_get_string(v) ?: "", "/proc") != 0 ||
                    !json_object_object_get_ex(m, "type", &v) ||
                    strcmp(json_object_get_string(v) ?: "", "proc") != 0)
                        continue;
                kept = json_object_new_array();
                if (!kept)
                        return false;
                if (json_object_object_get_ex(m, "options", &opts) &&
                    json_object_is_type(opts, json_type_array))
                        for (size_t j = 0; j < json_object_array_length(opts); j++) {
                                v = json_object_array_get_idx(opts, j);
                                if (strncmp(json_object_get_string(v) ?: "", "hidepid=", 8) == 0)
                                        continue;
                                if (json_object_array_add(kept, json_object_get(v)) < 0) {
                                        json_object_put(v);
                                        json_object_put(kept);
                                        return false;
                                }
                        }
                if (json_object_array_add(kept, json_object_new_string(HIDEPID)) < 0 ||
                    json_object_object_add(m, "options", kept) < 0) {
                        json_object_put(kept);
                        return false;
                }
                found = true;
        }
        return found;
}

/* The cgroup files that list a container's PIDs, for cgroup v2 and each
 * v1 hierarchy Docker mounts (a name that is not there is skipped by runc):
 * world-readable, they would list every process of every seat (docs/AGENT.md,
 * "Seats"). */
static const char *const cgroup_dirs[] = {
        "",        "blkio/",   "cpu/",      "cpuacct/",          "cpu,cpuacct/",
        "cpuset/", "devices/", "freezer/",  "hugetlb/",          "memory/",
        "misc/",   "net_cls/", "net_prio/", "net_cls,net_prio/", "perf_event/",
        "pids/",   "rdma/",    "systemd/",  "unified/",          NULL
};
static const char *const cgroup_lists[] = { "cgroup.procs", "cgroup.threads", "tasks", NULL };

/* Add the cgroup PID lists and /proc/locks to linux.maskedPaths (runc binds
 * /dev/null over each). Returns false on allocation failure or a malformed
 * "linux". */
static bool mask_cgroup_pids(struct json_object *config)
{
        struct json_object *linux_, *masked;

        if (!json_object_object_get_ex(config, "linux", &linux_)) {
                linux_ = json_object_new_object();
                if (!linux_ || json_object_object_add(config, "linux", linux_) < 0)
                        return false;
        }
        if (!json_object_is_type(linux_, json_type_object))
                return false;
        if (!json_object_object_get_ex(linux_, "maskedPaths", &masked)) {
                masked = json_object_new_array();
                if (!masked || json_object_object_add(linux_, "maskedPaths", masked) < 0)
                        return false;
        }
        if (!json_object_is_type(masked, json_type_array))
                return false;
        for (size_t d = 0; cgroup_dirs[d]; d++)
                for (size_t f = 0; cgroup_lists[f]; f++) {
                        char path[96];
                        struct json_object *v;

                        (void)snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", cgroup_dirs[d],
                                       cgroup_lists[f]);
                        v = json_object_new_string(path);
                        if (!v || json_object_array_add(masked, v) < 0) {
                                json_object_put(v);
                                return false;
                        }
                }
        {
                /* the PIDs of every file lock's holder in the sandbox */
                struct json_object *v = json_object_new_string("/proc/locks");

                if (!v || json_object_array_add(masked, v) < 0) {
                        json_object_put(v);
                        return false;
                }
        }
        return true;
}

static void write_all(int fd, const char *s, const char *path)
{
        size_t n = strlen(s);

        while (n > 0) {
                ssize_t w = write(fd, s, n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        die("write %s: %s", path, w < 0 ? strerror(errno) : "short write");
                s += w;
                n -= (size_t)w;
        }
}

static void rewrite_config(const char *bundle)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        struct json_object *config;
        struct stat st;
        const char *text;
        int fd;

        if (snprintf(path, sizeof(path), "%s/config.json", bundle) >= (int)sizeof(path) ||
            snprintf(tmp, sizeof(tmp), "%s/.config.json.XXXXXX", bundle) >= (int)sizeof(tmp))
                die("bundle path too long: %s", bundle);
        if (stat(path, &st) < 0)
                die("%s: %s (cannot hide the sandbox's processes)", path, strerror(errno));
        config = json_object_from_file(path);
        if (!config || !json_object_is_type(config, json_type_object)) {
                const char *why = config ? "not an object" : json_util_get_last_err() ?: "unreadable";

                die("%s: not an OCI config (%.*s); cannot hide the sandbox's processes", path,
                    (int)strcspn(why, "\n"), why);
        }
        if (!hide_proc(config))
                die("%s: no proc mount on /proc to set " HIDEPID " on", path);
        if (!mask_cgroup_pids(config))
                die("%s: cannot mask the cgroup PID lists", path);
        text = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                die("%s: out of memory", path);
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                die("create %s: %s", tmp, strerror(errno));
        write_all(fd, text, tmp);
        if (fchmod(fd, st.st_mode & 07777) < 0 || fsync(fd) < 0 || close(fd) < 0 ||
            rename(tmp, path) < 0) {
                int e = errno;

                (void)unlink(tmp);
                die("replace %s: %s", path, strerror(e));
        }
        json_object_put(config);
}

int main(int argc, char **argv)
{
        const char *runc = getenv("SANDBOX_RUNC");
        int cmd;

        if (argc > 1 && strncmp(argv[1], "--runc=", 7) == 0) {
                if (!runc || !runc[0])
                        runc = argv[1] + 7;
                argv[1] = argv[0];
                argv++;
                argc--;
        }
        if (!runc || !runc[0])
                runc = SANDBOX_RUNC_DEFAULT;
        cmd = find_command(argc, argv);
        if (cmd < argc && (strcmp(argv[cmd], "create") == 0 || strcmp(argv[cmd], "run") == 0))
                rewrite_config(find_bundle(cmd + 1, argc, argv));
        argv[0] = (char *)runc;
        execv(runc, argv);
        die("exec %s: %s", runc, strerror(errno));
}
