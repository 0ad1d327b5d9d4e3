/* Unit tests for lib/providers/docker/docker_agent.c: the run directory
 * and bind-source link under AGENT_DIR, in a temp directory. The property
 * that matters across crashes: whenever a container's run directory
 * exists, its sandbox's link exists too (docker_start prepares again only
 * when the run directory is missing). With the host's mount helper
 * (MOUNTD_SOCKET; a fake one here, a thread on a unix socket), a run
 * directory exists only once the helper has bounded it: a helper that
 * refuses or is absent leaves none, so no sandbox starts with an unbounded
 * one and the next start asks again. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/docker/docker_agent.h"
#include "providers/provider.h"

#define SID "0123456789abcdef0123456789abcdef"
#define REF "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff"
#define REF2 "1111111111112222222222223333333333334444444444445555555555556666"

static struct docker_agent agent;

static int setup(void **state)
{
        char tmpl[] = "/tmp/test-docker-agent-XXXXXX";

        (void)state;
        memset(&agent, 0, sizeof(agent));
        assert_non_null(mkdtemp(tmpl));
        snprintf(agent.dir, sizeof(agent.dir), "%s/agents", tmpl);
        snprintf(agent.bin, sizeof(agent.bin), "/bin/true");
        return 0;
}

static int teardown(void **state)
{
        char cmd[PATH_MAX + 16];

        (void)state;
        /* agent.dir is <mkdtemp>/agents: remove the mkdtemp directory */
        snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strrchr(agent.dir, '/') - agent.dir),
                 agent.dir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

/* ---- a fake sandbox-mountd: records each request line, answers one line */

static struct {
        int lfd;
        pthread_t thread;
        volatile int stop;
        const char *answer; /* "ok\n", "err 39 not empty\n" */
        char lines[8][128];
        int n;
} fake;

static void *fake_main(void *arg)
{
        (void)arg;
        while (!fake.stop) {
                struct pollfd p = { .fd = fake.lfd, .events = POLLIN };
                char buf[128];
                ssize_t n;
                int c;

                if (poll(&p, 1, 50) <= 0)
                        continue;
                c = accept(fake.lfd, NULL, NULL);
                if (c < 0)
                        continue;
                /* the whole line, as sandbox-mountd reads it: the client may
                 * send it in pieces (answering after the first one made the
                 * client's next send fail with EPIPE under load) */
                n = 0;
                while ((size_t)n < sizeof(buf) - 1 && !memchr(buf, '\n', (size_t)n)) {
                        struct pollfd q = { .fd = c, .events = POLLIN };
                        ssize_t k;

                        if (poll(&q, 1, 2000) <= 0)
                                break;
                        k = read(c, buf + n, sizeof(buf) - 1 - (size_t)n);
                        if (k <= 0)
                                break;
                        n += k;
                }
                if (n > 0 && fake.n < 8) {
                        buf[n] = '\0';
                        buf[strcspn(buf, "\n")] = '\0';
                        snprintf(fake.lines[fake.n++], sizeof(fake.lines[0]), "%s", buf);
                }
                /* a failed write is the client's to notice */
                (void)!write(c, fake.answer, strlen(fake.answer));
                close(c);
        }
        return NULL;
}

/* agent.mountd: a fake helper answering answer */
static void fake_start(const char *answer)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };

        snprintf(agent.mountd, sizeof(agent.mountd), "%.*s/mountd.sock",
                 (int)(strrchr(agent.dir, '/') - agent.dir), agent.dir);
        strcpy(a.sun_path, agent.mountd);
        (void)unlink(agent.mountd);
        memset(fake.lines, 0, sizeof(fake.lines));
        fake.n = 0;
        fake.stop = 0;
        fake.answer = answer;
        fake.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_true(fake.lfd >= 0);
        assert_int_equal(bind(fake.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(fake.lfd, 8), 0);
        agent.mountd_timeout_ms = 5000;
        assert_int_equal(pthread_create(&fake.thread, NULL, fake_main, NULL), 0);
}

static void fake_stop(void)
{
        fake.stop = 1;
        pthread_join(fake.thread, NULL);
        close(fake.lfd);
}

static void path_of(const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", agent.dir, name);
}

static void expect_link(const char *sid, const char *ref)
{
        char path[PATH_MAX], target[128];
        ssize_t n;

        char name[64];

        snprintf(name, sizeof(name), "sb-%s", sid);
        path_of(name, path, sizeof(path));
        n = readlink(path, target, sizeof(target) - 1);
        assert_true(n > 0);
        target[n] = '\0';
        assert_string_equal(target, ref);
}

static void test_prepare_makes_link_and_run_dir(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), 0);
        expect_link(SID, REF);
        /* again (a start after a crash): the same state, no error */
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        expect_link(SID, REF);
}

/* A crash after the link and before the run directory: the run directory
 * is missing, so the next start prepares again (and repairs). */
static void test_link_without_run_dir_reads_missing(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256], run[PATH_MAX];

        (void)state;
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        path_of(REF, run, sizeof(run));
        assert_int_equal(rmdir(run), 0);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), 0);
}

/* A directory Docker made for a missing bind source, or a stale link to
 * another container (the sandbox re-created under the same name), is
 * replaced by the link to the current container. */
static void test_prepare_replaces_dir_and_stale_link(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", src[PATH_MAX];

        (void)state;
        assert_int_equal(docker_agent_prepare(&agent, SID, REF2, false, err), 0);
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        expect_link(SID, REF);
        path_of("sb-" SID, src, sizeof(src));
        assert_int_equal(unlink(src), 0);
        assert_int_equal(mkdir(src, 0755), 0);
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        expect_link(SID, REF);
}

static void test_cleanup_removes_run_dir_and_link(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256], src[PATH_MAX];
        struct stat st;

        (void)state;
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        docker_agent_cleanup(&agent, REF);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
        path_of("sb-" SID, src, sizeof(src));
        assert_int_equal(lstat(src, &st), -1);
}

/* A dialing agent's container: the relay's marker <ref>.dial beside its run
 * directory, made last, gone with the cleanup; none for a listening one. */
static void test_dialing_agent_has_a_marker(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", mark[PATH_MAX];
        struct stat st;

        (void)state;
        path_of(REF ".dial", mark, sizeof(mark));
        assert_int_equal(docker_agent_prepare(&agent, SID, REF2, false, err), 0);
        assert_false(docker_agent_dials(&agent, REF2));
        assert_false(docker_agent_dials(&agent, REF));
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, true, err), 0);
        assert_int_equal(lstat(mark, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_true(docker_agent_dials(&agent, REF));
        /* again (a start that repairs): no error */
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, true, err), 0);
        docker_agent_cleanup(&agent, REF);
        assert_int_equal(lstat(mark, &st), -1);
        assert_false(docker_agent_dials(&agent, REF));
        assert_false(docker_agent_dials(&agent, "../x"));
}

static void test_refs_that_are_not_ids_are_refused(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        assert_int_equal(docker_agent_prepare(&agent, SID, "../etc", false, err), -EINVAL);
        assert_int_equal(docker_agent_run_dir(&agent, "abc", dir, sizeof(dir)), -EINVAL);
        assert_int_equal(docker_agent_run_dir(&agent, REF "/..", dir, sizeof(dir)), -EINVAL);
}

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

/* With an egress CA, its certificate is copied into the sandbox's egress
 * directory (0644); a file holding a private key, not a certificate, or
 * too long is refused, and so is a missing one. */
static void test_egress_ca_copied_never_a_key(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[512], ca[200], got[256] = "", *big;
        const char *pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        struct stat st;
        FILE *f;

        (void)state;
        snprintf(agent.egress_dir, sizeof(agent.egress_dir), "%.*s/egress",
                 (int)(strrchr(agent.dir, '/') - agent.dir), agent.dir);
        snprintf(ca, sizeof(ca), "%.*s/ca.pem", (int)(strrchr(agent.dir, '/') - agent.dir),
                 agent.dir);
        snprintf(agent.egress_ca, sizeof(agent.egress_ca), "%s", ca);
        write_text(ca, pem);
        assert_int_equal(docker_agent_egress_prepare(&agent, SID, dir, sizeof(dir), err), 0);
        strcat(dir, "/ca.pem");
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        f = fopen(dir, "r");
        assert_non_null(f);
        assert_int_equal(fread(got, 1, sizeof(got) - 1, f), strlen(pem));
        fclose(f);
        assert_string_equal(got, pem);

        write_text(ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
                       "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
        assert_int_equal(docker_agent_egress_prepare(&agent, SID, dir, sizeof(dir), err), -EINVAL);
        assert_non_null(strstr(err, "not a PEM certificate"));
        write_text(ca, "no certificate here\n");
        assert_int_equal(docker_agent_egress_prepare(&agent, SID, dir, sizeof(dir), err), -EINVAL);
        big = malloc(70 * 1024);
        assert_non_null(big);
        memset(big, 'A', 70 * 1024 - 1);
        memcpy(big, "-----BEGIN CERTIFICATE-----\n", 28);
        big[70 * 1024 - 1] = '\0';
        write_text(ca, big);
        free(big);
        assert_int_equal(docker_agent_egress_prepare(&agent, SID, dir, sizeof(dir), err), -EINVAL);
        assert_int_equal(unlink(ca), 0);
        assert_int_equal(docker_agent_egress_prepare(&agent, SID, dir, sizeof(dir), err), -ENOENT);
        assert_non_null(strstr(err, "CA certificate"));
}

/* The helper bounds a listening agent's run directory before anything
 * can write there, and is asked to drop it at the cleanup. */
static void test_helper_bounds_the_run_dir(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        fake_start("ok\n");
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), 0);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), 0);
        expect_link(SID, REF);
        docker_agent_cleanup(&agent, REF);
        fake_stop();
        assert_int_equal(fake.n, 2);
        assert_string_equal(fake.lines[0], "run " REF);
        assert_string_equal(fake.lines[1], "unrun " REF);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
}

/* A refusal: no run directory (the next start prepares again), the
 * helper's reason in the error. */
static void test_helper_refusal_leaves_no_run_dir(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        fake_start("err 39 /x/" REF ": not empty\n");
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), -EIO);
        fake_stop();
        assert_non_null(strstr(err, "sandbox-mountd: /x/" REF ": not empty"));
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
        expect_link(SID, REF);
}

/* No helper where MOUNTD_SOCKET says: the same, and the error names the
 * helper and its socket. */
static void test_helper_absent(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        snprintf(agent.mountd, sizeof(agent.mountd), "/nonexistent/mountd.sock");
        agent.mountd_timeout_ms = 1000;
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), -EIO);
        assert_non_null(strstr(err, "sandbox-mountd"));
        assert_non_null(strstr(err, "/nonexistent/mountd.sock"));
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
}

/* A helper that answers something else, or nothing: refused too. */
static void test_helper_garbage(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        fake_start("yes\n");
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), -EIO);
        fake_stop();
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
        fake_start("");
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, false, err), -EIO);
        fake_stop();
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), -ENOENT);
}

/* A dialing agent's run directory is read-only in its sandbox: no tmpfs. */
static void test_helper_not_asked_for_a_dialing_agent(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", dir[256];

        (void)state;
        fake_start("err 5 must not be asked\n");
        assert_int_equal(docker_agent_prepare(&agent, SID, REF, true, err), 0);
        fake_stop();
        assert_int_equal(fake.n, 0);
        assert_int_equal(docker_agent_run_dir(&agent, REF, dir, sizeof(dir)), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_prepare_makes_link_and_run_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_link_without_run_dir_reads_missing, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_prepare_replaces_dir_and_stale_link, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_cleanup_removes_run_dir_and_link, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_dialing_agent_has_a_marker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refs_that_are_not_ids_are_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_egress_ca_copied_never_a_key, setup, teardown),
                cmocka_unit_test_setup_teardown(test_helper_bounds_the_run_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_helper_refusal_leaves_no_run_dir, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_helper_absent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_helper_garbage, setup, teardown),
                cmocka_unit_test_setup_teardown(test_helper_not_asked_for_a_dialing_agent, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
