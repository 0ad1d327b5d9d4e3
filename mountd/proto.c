/* proto: the request lines of sandbox-mountd (mountd.h). Pure: the unit
 * test (tests/unit/test_mountd_proto.c) compiles it in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountd.h"

bool mountd_hex(const char *s, size_t lo, size_t hi)
{
        size_t n = strspn(s, "0123456789abcdef");

        return n >= lo && n <= hi && s[n] == '\0';
}

/* The next space-separated word of *p (a copy into buf, size bytes) or
 * false when there is none or it does not fit. */
static bool word(const char **p, const char *end, char *buf, size_t size)
{
        const char *s = *p, *e;

        if (s >= end)
                return false;
        e = memchr(s, ' ', (size_t)(end - s));
        if (!e)
                e = end;
        if (e == s || (size_t)(e - s) >= size)
                return false;
        memcpy(buf, s, (size_t)(e - s));
        buf[e - s] = '\0';
        *p = e < end ? e + 1 : e;
        return true;
}

int mountd_parse(const char *line, size_t len, struct mountd_req *ret, char *err, size_t errsz)
{
        static const struct {
                const char *name;
                enum mountd_verb verb;
        } verbs[] = {
                { "run", MOUNTD_RUN },
                { "unrun", MOUNTD_UNRUN },
                { "disk-make", MOUNTD_DISK_MAKE },
                { "disk-attach", MOUNTD_DISK_ATTACH },
                { "undisk", MOUNTD_UNDISK },
                { "disks", MOUNTD_DISKS },
                { "ping", MOUNTD_PING },
        };
        const char *p = line, *end = line + len;
        char verb[16], mib[24];
        size_t i;

        memset(ret, 0, sizeof(*ret));
        if (memchr(line, '\0', len) || len >= MOUNTD_LINE_MAX || (len && line[len - 1] == ' ')) {
                snprintf(err, errsz, "not a request line");
                return -EINVAL;
        }
        if (!word(&p, end, verb, sizeof(verb))) {
                snprintf(err, errsz, "no verb");
                return -EINVAL;
        }
        for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]) && strcmp(verbs[i].name, verb); i++)
                ;
        if (i == sizeof(verbs) / sizeof(verbs[0])) {
                snprintf(err, errsz, "unknown verb %.15s", verb);
                return -EINVAL;
        }
        ret->verb = verbs[i].verb;
        switch (ret->verb) {
        case MOUNTD_RUN:
        case MOUNTD_UNRUN:
                /* a container id as Docker makes it (12 and more for short ids) */
                if (!word(&p, end, ret->id, sizeof(ret->id)) || !mountd_hex(ret->id, 12, 64)) {
                        snprintf(err, errsz, "%s: expected a container id", verb);
                        return -EINVAL;
                }
                break;
        case MOUNTD_DISK_MAKE:
        case MOUNTD_DISK_ATTACH:
        case MOUNTD_UNDISK:
                if (!word(&p, end, ret->id, sizeof(ret->id)) || !mountd_hex(ret->id, 32, 32)) {
                        snprintf(err, errsz, "%s: expected a sandbox id", verb);
                        return -EINVAL;
                }
                if (ret->verb == MOUNTD_DISK_MAKE) {
                        char *e;

                        if (!word(&p, end, mib, sizeof(mib)) || mib[0] < '0' || mib[0] > '9' ||
                            (ret->mib = strtoll(mib, &e, 10), *e) ||
                            ret->mib < MOUNTD_DISK_MIN_MIB || ret->mib > MOUNTD_DISK_MAX_MIB) {
                                snprintf(err, errsz, "%s: expected a size in MiB, %d to %lld", verb,
                                         MOUNTD_DISK_MIN_MIB, MOUNTD_DISK_MAX_MIB);
                                return -EINVAL;
                        }
                }
                if (ret->verb != MOUNTD_UNDISK && (!word(&p, end, ret->layer, sizeof(ret->layer)) ||
                                                   !mountd_hex(ret->layer, 64, 64))) {
                        snprintf(err, errsz, "%s: expected an overlay2 layer id", verb);
                        return -EINVAL;
                }
                break;
        case MOUNTD_DISKS:
        case MOUNTD_PING: break;
        }
        if (p != end) {
                snprintf(err, errsz, "%s: too many words", verb);
                return -EINVAL;
        }
        return 0;
}
