/* egress_ca: the sandbox's trust of the deployment's egress CA
 * (docs/EGRESS.md, "Injection over HTTPS"). See egress_ca.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "egress_ca.h"

#define CA_MAX (64 * 1024)
#define BUNDLE_MAX (16 * 1024 * 1024)

/* Where images keep the bundle their TLS libraries read by default: Debian,
 * Ubuntu, Alpine, Arch; Fedora, RHEL; openSUSE; Alpine's other name. */
static const char *const bundles[] = {
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
};

/* The whole of path (at most max bytes, NUL-terminated) into *ret, its
 * length into *ret_len. 0 or a negative errno (-EFBIG over max). */
static int slurp(const char *path, size_t max, char **ret, size_t *ret_len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t n = 0;
        ssize_t got = 0;
        char *buf;

        if (fd < 0)
                return -errno;
        buf = malloc(max + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        while (n <= max && (got = read(fd, buf + n, max + 1 - n)) > 0)
                n += (size_t)got;
        close(fd);
        if (got < 0 || n > max) {
                free(buf);
                return got < 0 ? -EIO : -EFBIG;
        }
        buf[n] = '\0';
        *ret = buf;
        *ret_len = n;
        return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -EIO;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Append ca to the bundle at path unless it holds it already (the agent
 * starts again after a stop/start: the writable layer keeps the bundle). */
static int bundle_add(const char *path, const char *ca, size_t ca_len)
{
        char *old = NULL;
        size_t old_len = 0;
        int fd, r = slurp(path, BUNDLE_MAX, &old, &old_len);

        if (r < 0)
                return r;
        if (strstr(old, ca)) {
                free(old);
                return 0;
        }
        fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                free(old);
                return -errno;
        }
        r = old_len && old[old_len - 1] != '\n' ? write_all(fd, "\n", 1) : 0;
        free(old);
        if (r == 0)
                r = write_all(fd, ca, ca_len);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

/* A new file path holding data, 0644. */
static int file_new(const char *path, const char *data, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644), r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, data, len);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

void egress_ca_trust(void)
{
        const char *bundle = NULL;
        char *ca = NULL;
        size_t len = 0;
        int r;

        if (slurp(EGRESS_CA_IN, CA_MAX, &ca, &len) < 0)
                return; /* no HTTPS injection in this deployment */
        /* Node.js reads its own store, and adds this file to it */
        (void)setenv("NODE_EXTRA_CA_CERTS", EGRESS_CA_IN, 0);
        for (size_t i = 0; i < sizeof(bundles) / sizeof(bundles[0]) && !bundle; i++)
                if (access(bundles[i], F_OK) == 0)
                        bundle = bundles[i];
        if (bundle) {
                r = bundle_add(bundle, ca, len);
        } else {
                /* an image without CAs: it trusted nothing, now only this one */
                bundle = bundles[0];
                (void)mkdir("/etc/ssl", 0755);
                (void)mkdir("/etc/ssl/certs", 0755);
                r = file_new(bundle, ca, len);
        }
        /* so that update-ca-certificates (Debian's) keeps it in the bundle */
        if (r == 0 && access("/usr/local/share/ca-certificates", F_OK) == 0)
                (void)file_new("/usr/local/share/ca-certificates/sandbox-broker-egress.crt", ca, len);
        free(ca);
        if (r < 0) {
                agent_log("sandbox-agent: egress CA: %s: %s (only NODE_EXTRA_CA_CERTS names it)",
                          bundle, strerror(-r));
                return;
        }
        /* for TLS libraries built elsewhere (their own default path) and
         * Python's requests (certifi otherwise); not overwriting */
        (void)setenv("SSL_CERT_FILE", bundle, 0);
        (void)setenv("REQUESTS_CA_BUNDLE", bundle, 0);
}
