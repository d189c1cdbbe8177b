#define _GNU_SOURCE
#include "exec_cli.h"
#include "host_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "status.h"

#define READY_TIMEOUT_MS 5000

pid_t exec_host_proxy_start(const char *socket_path, char *const *rules, int n, int records_fd, fs_err *err)
{
    char bin[PATH_MAX], fdtext[16], records_text[16];
    char **argv;
    int ready[2], i, at = 0;
    pid_t pid;
    struct pollfd p;
    struct stat st;

    if (exec_cli_beside(EXEC_PROGRAM_PROXY, bin, sizeof(bin)) != 0) {
        fs_err_set(err, "cannot find " EXEC_PROGRAM_PROXY " beside " EXEC_NAME);
        return -1;
    }
    argv = calloc((size_t)n + 10, sizeof(*argv));
    if (!argv || pipe2(ready, O_CLOEXEC) != 0) {
        free(argv);
        fs_err_set(err, "cannot start the network proxy: %s", strerror(errno));
        return -1;
    }
    snprintf(fdtext, sizeof(fdtext), "%d", ready[1]);
    argv[at++] = bin;
    argv[at++] = "--listen";
    argv[at++] = (char *)socket_path;
    argv[at++] = "--ready-fd";
    argv[at++] = fdtext;
    if (records_fd >= 0) {
        snprintf(records_text, sizeof(records_text), "%d", records_fd);
        argv[at++] = "--records-fd";
        argv[at++] = records_text;
    }
    for (i = 0; i < n; i++)
        argv[at++] = rules[i];
    pid = fork();
    if (pid == 0) {
        sigset_t none;

        /* the proxy ends with this helper; what it says goes to the run's stderr */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(STDERR_FILENO, STDOUT_FILENO);
        fcntl(ready[1], F_SETFD, 0);
        if (records_fd >= 0)
            fcntl(records_fd, F_SETFD, 0); /* its refusals, as records */
        execv(bin, argv);
        fprintf(stderr, EXEC_NAME ": cannot run %s: %s\n", bin, strerror(errno));
        _exit(126);
    }
    free(argv);
    close(ready[1]);
    if (pid < 0) {
        close(ready[0]);
        fs_err_set(err, "cannot start the network proxy: %s", strerror(errno));
        return -1;
    }
    /* the proxy closes its end once it listens (or dies) */
    p.fd = ready[0];
    p.events = POLLIN;
    while (poll(&p, 1, READY_TIMEOUT_MS) < 0 && errno == EINTR)
        ;
    close(ready[0]);
    if (lstat(socket_path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        exec_host_proxy_stop(pid, socket_path);
        fs_err_set(err, "the network proxy did not start");
        return -1;
    }
    return pid;
}

void exec_host_proxy_stop(pid_t pid, const char *socket_path)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    unlink(socket_path);
}
