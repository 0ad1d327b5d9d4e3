/* sandbox-agent: one connection in a handler child (agent.h): read the
 * request under a deadline, dispatch it through the route table, answer.
 * A handler is a fork of PID 1, so whatever a request does to it (a crash,
 * a hang until its deadline) never touches PID 1. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "exec.h"
#include "files.h"
#include "http.h"
#include "tunnel.h"

#define LINGER_MS 1000 /* reading the rest of a refused request */
#define LINGER_MAX (4 * 1024 * 1024)

static void h_health(struct http_request *req, const struct agent_state *state)
{
        static const char *const names[] = {
                [ENTRY_NONE] = "none", [ENTRY_RUNNING] = "running", [ENTRY_EXITED] = "exited"
        };
        char body[256], code[32] = "";
        int n;

        if (req->n_params > 0) {
                (void)http_reply_error(req, 400, "/health takes no parameter");
                return;
        }
        if (state->entry == ENTRY_EXITED)
                (void)snprintf(code, sizeof(code), "exit_code=%d\n", state->entry_code);
        n = snprintf(body, sizeof(body), "agent=1\npid=%d\nentrypoint=%s\n%s",
                     (int)state->agent_pid, names[state->entry], code);
        if (http_reply_head(req, 200, "text/plain", n) == 0)
                (void)http_write_all(req->fd, body, (size_t)n);
}

static void h_exec(struct http_request *req, const struct agent_state *state)
{
        (void)state;
        exec_handle(req);
}

static void h_entrypoint(struct http_request *req, const struct agent_state *state)
{
        exec_entrypoint(req, state->entry != ENTRY_NONE, state->entry_fd);
}

static void h_file_get(struct http_request *req, const struct agent_state *state)
{
        (void)state;
        files_get(req);
}

static void h_tunnel(struct http_request *req, const struct agent_state *state)
{
        (void)state;
        tunnel_handle(req);
}

static void h_file_put(struct http_request *req, const struct agent_state *state)
{
        (void)state;
        files_put(req);
}

/* The one route table (docs/AGENT.md, "Protocol"). */
static const struct route {
        const char *path;
        const char *method;
        void (*run)(struct http_request *req, const struct agent_state *state);
} routes[] = {
        { "/health", "GET", h_health },
        { "/exec", "POST", h_exec },
        { "/entrypoint", "POST", h_entrypoint },
        { "/file", "GET", h_file_get },
        { "/file", "PUT", h_file_put },
        { "/tunnel", "GET", h_tunnel },
};

static void dispatch(struct http_request *req, const struct agent_state *state)
{
        bool path_known = false;

        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
                if (strcmp(routes[i].path, req->path) != 0)
                        continue;
                path_known = true;
                if (strcmp(routes[i].method, req->method) == 0) {
                        routes[i].run(req, state);
                        return;
                }
        }
        if (path_known)
                (void)http_reply_error(req, 405, "method %s not allowed on %s", req->method,
                                       req->path);
        else
                (void)http_reply_error(req, 404, "no route %s", req->path);
}

/* After an answer that left request bytes unread: stop writing and read
 * (and drop) what the client still sends, for a moment, so that it gets to
 * read the answer instead of failing on a write to a closed socket. */
static void linger(int fd)
{
        long long end = agent_now_ms() + LINGER_MS;
        size_t total = 0;
        char buf[4096];

        (void)shutdown(fd, SHUT_WR);
        while (total < LINGER_MAX) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                long long left = end - agent_now_ms();
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        break;
                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n <= 0)
                        break;
                total += (size_t)n;
        }
}

void agent_handle(int conn_fd, const struct agent_state *state)
{
        struct http_request req;
        int r;

        /* A client that does not send its head in time ends the handler:
         * SIGALRM's default action. */
        (void)alarm(AGENT_HEADER_TIMEOUT_S);
        r = http_request_read(&req, conn_fd);
        (void)alarm(0);
        if (r > 0)
                (void)http_reply_error(&req, r, "%s", req.error);
        else if (r == 0)
                dispatch(&req, state);
        if (r > 0 || req.body_left > 0)
                linger(conn_fd);
        http_request_free(&req);
        (void)close(conn_fd);
}
