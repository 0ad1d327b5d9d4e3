/* replay: run a fuzz target's LLVMFuzzerTestOneInput over every file of a
 * corpus directory without libFuzzer, so the corpus replays under gcc and the
 * sanitizers in `make unit` / `make test`.
 *
 *   fuzz-replay-NAME [DIR...]    (no DIR: FUZZ_CORPUS_DIR, set by the Makefile)
 *
 * Each file is read into a buffer of exactly its size, so an over-read is a
 * sanitizer report. Ends with a cmocka-style summary line that
 * scripts/run-unit counts as one test; a crash ends the run without it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef FUZZ_CORPUS_DIR
#define FUZZ_CORPUS_DIR "."
#endif

#define REPLAY_MAX_FILE (16 * 1024 * 1024)

/* Read path whole into *ret (malloc'd, exactly *ret_len bytes; 1 byte for an
 * empty file so the pointer is valid). Returns 0 or a negative errno. */
static int read_file(int dirfd, const char *name, uint8_t **ret, size_t *ret_len)
{
        struct stat st;
        uint8_t *buf = NULL;
        size_t got = 0;
        int fd, r = 0;

        *ret = NULL;
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if (st.st_size > REPLAY_MAX_FILE) {
                r = -EFBIG;
                goto out;
        }
        buf = malloc(st.st_size ? (size_t)st.st_size : 1);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        while (got < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -EIO;
                        goto out;
                }
                got += (size_t)n;
        }
        *ret = buf;
        *ret_len = got;
        buf = NULL;
out:
        free(buf);
        close(fd);
        return r;
}

static int skip_entry(const struct dirent *d)
{
        return d->d_name[0] != '.';
}

/* Replay every regular file of dir in name order. Returns the number run, or
 * a negative errno. */
static int replay_dir(const char *dir)
{
        struct dirent **names = NULL;
        int n, dirfd, count = 0, r = 0;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
                return -errno;
        }
        n = scandir(dir, &names, skip_entry, alphasort);
        if (n < 0) {
                r = -errno;
                fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
                close(dirfd);
                return r;
        }
        for (int i = 0; i < n; i++) {
                struct stat st;
                uint8_t *buf = NULL;
                size_t len = 0;

                if (r == 0 && fstatat(dirfd, names[i]->d_name, &st, 0) == 0 &&
                    S_ISREG(st.st_mode)) {
                        r = read_file(dirfd, names[i]->d_name, &buf, &len);
                        if (r < 0) {
                                fprintf(stderr, "replay: %s/%s: %s\n", dir, names[i]->d_name,
                                        strerror(-r));
                        } else {
                                LLVMFuzzerTestOneInput(buf, len);
                                free(buf);
                                count++;
                        }
                }
                free(names[i]);
        }
        free(names);
        close(dirfd);
        return r < 0 ? r : count;
}

int main(int argc, char **argv)
{
        const char *def[] = { FUZZ_CORPUS_DIR };
        const char *const *dirs = argc > 1 ? (const char *const *)argv + 1 : def;
        int ndirs = argc > 1 ? argc - 1 : 1, total = 0;

        for (int i = 0; i < ndirs; i++) {
                int r = replay_dir(dirs[i]);
                if (r < 0) {
                        printf("[  FAILED  ] 1 test(s).\n");
                        return 1;
                }
                total += r;
        }
        if (total == 0) {
                /* An empty or missing corpus would pass vacuously. */
                fprintf(stderr, "replay: no inputs found\n");
                printf("[  FAILED  ] 1 test(s).\n");
                return 1;
        }
        printf("fuzz replay: %d input(s) from %d director%s, no crash\n", total, ndirs,
               ndirs == 1 ? "y" : "ies");
        printf("[  PASSED  ] 1 test(s).\n");
        return 0;
}
