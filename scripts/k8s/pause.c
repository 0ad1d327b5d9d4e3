/* The pod sandbox ("pause") process of the test Kubernetes cluster (scripts/k8s-up): holds the
 * pod's namespaces, reaps orphans, exits on SIGINT/SIGTERM. Built static (musl-gcc, else gcc
 * -static) and imported into the cluster's containerd as a one-layer image, so no registry is
 * ever contacted. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void)
{
    struct sigaction term = {.sa_handler = on_term};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};

    if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0)
        return 1;
    for (;;)
        pause();
    return 0;
}
