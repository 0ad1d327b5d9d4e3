/* agent-install: the agent image's init container (docs/KUBERNETES.md, "The
 * agent"). Copies /sandbox-agent, the static build of agent/, to DEST (the
 * pod's emptyDir, which the main container mounts read-only) with mode
 * 0555, through a temp file renamed into place. Static, libc only: the
 * image holds these two files and nothing else.
 *
 *   agent-install DEST */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC "/sandbox-agent"

int main(int argc, char **argv)
{
        char tmp[4096], buf[65536];
        int in, out;
        ssize_t n;

        if (argc != 2 || argv[1][0] != '/' || strlen(argv[1]) > sizeof(tmp) - 16) {
                fprintf(stderr, "usage: agent-install /ABSOLUTE/DEST\n");
                return 2;
        }
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
        in = open(SRC, O_RDONLY | O_CLOEXEC);
        out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0555);
        if (in < 0 || out < 0) {
                fprintf(stderr, "agent-install: %s: %s\n", in < 0 ? SRC : tmp, strerror(errno));
                return 1;
        }
        while ((n = read(in, buf, sizeof(buf))) > 0) {
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t)(n - off));

                        if (w < 0) {
                                if (errno == EINTR)
                                        continue;
                                fprintf(stderr, "agent-install: write: %s\n", strerror(errno));
                                return 1;
                        }
                        off += w;
                }
        }
        if (n < 0 || fchmod(out, 0555) < 0 || close(out) < 0 || rename(tmp, argv[1]) < 0) {
                fprintf(stderr, "agent-install: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        return 0;
}
