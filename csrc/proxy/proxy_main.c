/* flemma-sandbox-proxy: the filtering HTTP proxy of the allowlist network
 * mode. It listens on a unix socket; each client gets a thread of its own
 * (so a slow one stalls nobody else) with fixed buffers; a request goes on
 * only when its host passes --allow/--deny (csrc/shared/net_rules.h) and resolves
 * to an address the proxy may connect to. Every refusal is answered with
 * an HTTP error whose body names the rule, and printed on stdout as one
 * line "blocked HOST: WHY" for Neovim. The proxy ends with the process that
 * started it (Neovim), or on SIGTERM.
 *
 *   flemma-sandbox-proxy --listen PATH [--allow ENTRY]... [--deny ENTRY]...
 *                        [--idle-ms MS] [--max-clients N] [--test-hosts FILE]
 *                        [--ready-fd FD] [--records-fd FD] [--ask PATH]
 *
 * With --ask, a name no rule allows or denies is not refused at once: the
 * proxy puts "ask HOST PORT" to the unix socket PATH (Neovim's, which asks
 * the user) and goes on when the answer line is "once" or "always". The
 * answer holds for the rest of the proxy's run (one command).
 *
 * With --ready-fd (flemma-sandbox-host's way) FD is closed once it listens
 * and nothing else is printed but refusals; else a first line says
 * "listening PATH PID".
 *
 * --test-hosts (NAME ADDRESS [checked] lines, 127.x addresses only, the
 * rule on loopback kept for "checked" names; or the file
 * FLEMMA_SANDBOX_PROXY_TEST_HOSTS names) is honoured only when the
 * environment has FLEMMA_SANDBOX_PROXY_TEST=1: the specs' names for their
 * own servers on 127.0.0.x, which the proxy may then reach. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "net_rules.h"
#include "proxy_conn.h"
#include "status.h"

static int usage(void)
{
    fputs("usage: flemma-sandbox-proxy --listen PATH [--allow ENTRY]... [--deny ENTRY]...\n"
          "                            [--idle-ms MS] [--max-clients N] [--test-hosts FILE] [--ask PATH]\n",
          stderr);
    return 2;
}

static int read_test_hosts(const char *file, fs_vec *out)
{
    FILE *f = fopen(file, "r");
    char line[512], name[256], addr[64], how[16];

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        int n = sscanf(line, "%255s %63s %15s", name, addr, how);

        if (n < 2)
            continue;
        /* test servers run on loopback, and only there is the rule relaxed;
         * "checked" keeps it (a name that stands for the host's loopback) */
        if (strncmp(addr, "127.", 4) != 0 || !fs_host_is_ip(addr) || (n == 3 && strcmp(how, "checked") != 0) ||
            fs_vec_push_str(out, name) != 0 || fs_vec_push_str(out, addr) != 0 ||
            fs_vec_push_str(out, n == 3 ? "checked" : "") != 0) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static int listen_at(const char *path)
{
    struct sockaddr_un sa;
    struct stat st;
    char dir[4096];
    const char *slash = strrchr(path, '/'), *name = path;
    int fd, dir_fd = -1;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) < sizeof(sa.sun_path)) {
        memcpy(sa.sun_path, path, strlen(path) + 1);
    } else {
        /* a path longer than an address holds (a deep state folder): its
         * folder by descriptor, the name in it */
        if (!slash || slash == path || (size_t)(slash - path) >= sizeof(dir))
            return -1;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        name = slash + 1;
        dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 ||
            (size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dir_fd, name) >=
                sizeof(sa.sun_path)) {
            if (dir_fd >= 0)
                close(dir_fd);
            return -1;
        }
    }
    /* a socket left by a proxy that was killed; never anything else */
    if (lstat(sa.sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(sa.sun_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        umask(077);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
            close(fd);
            fd = -1;
        }
    }
    if (dir_fd >= 0)
        close(dir_fd);
    return fd;
}

/* Accepts clients until SIGTERM (also sent when the parent dies), which a
 * signalfd turns into one more thing to poll: the proxy ends at once. */
static int serve(int listen_fd, proxy_shared *shared)
{
    sigset_t stop;
    int sig_fd, rc = 0;

    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    sig_fd = signalfd(-1, &stop, SFD_CLOEXEC);
    if (sig_fd < 0)
        return 1;
    for (;;) {
        struct pollfd fds[2];

        fds[0].fd = listen_fd;
        fds[0].events = POLLIN;
        fds[1].fd = sig_fd;
        fds[1].events = POLLIN;
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = 1;
            break;
        }
        if (fds[1].revents & POLLIN)
            break;
        if (fds[0].revents & POLLIN) {
            int client = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

            if (client >= 0)
                proxy_start(shared, client);
        }
    }
    close(sig_fd);
    return rc;
}

int main(int argc, char **argv)
{
    proxy_shared shared;
    const char *listen_path = NULL, *test_hosts = NULL;
    int i, fd, rc = 0, ready_fd = -1;

    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 1; /* started by something already gone */
    if (proxy_shared_init(&shared) != 0)
        return 1;
    for (i = 1; i < argc && rc == 0; i++) {
        int has = i + 1 < argc;

        if (strcmp(argv[i], "--listen") == 0 && has)
            listen_path = argv[++i];
        else if (strcmp(argv[i], "--allow") == 0 && has)
            rc = fs_vec_push_str(&shared.allow, argv[++i]);
        else if (strcmp(argv[i], "--deny") == 0 && has)
            rc = fs_vec_push_str(&shared.deny, argv[++i]);
        else if (strcmp(argv[i], "--idle-ms") == 0 && has)
            shared.idle_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-clients") == 0 && has)
            shared.max_clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--test-hosts") == 0 && has)
            test_hosts = argv[++i];
        else if (strcmp(argv[i], "--ask") == 0 && has)
            shared.ask_path = argv[++i];
        else if (strcmp(argv[i], "--ready-fd") == 0 && has)
            ready_fd = atoi(argv[++i]);
        else if (strcmp(argv[i], "--records-fd") == 0 && has)
            shared.records_fd = atoi(argv[++i]);
        else
            return usage();
    }
    if (rc != 0) {
        fputs("flemma-sandbox-proxy: out of memory\n", stderr);
        return 1;
    }
    if (!listen_path || shared.idle_ms <= 0 || shared.max_clients <= 0)
        return usage();
    if (shared.ask_path && strlen(shared.ask_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        fprintf(stderr, "flemma-sandbox-proxy: --ask %s: too long for a unix socket\n", shared.ask_path);
        return 2;
    }
    if (!test_hosts && getenv("FLEMMA_SANDBOX_PROXY_TEST") && strcmp(getenv("FLEMMA_SANDBOX_PROXY_TEST"), "1") == 0)
        test_hosts = getenv("FLEMMA_SANDBOX_PROXY_TEST_HOSTS");
    if (test_hosts) {
        const char *on = getenv("FLEMMA_SANDBOX_PROXY_TEST");

        if (!on || strcmp(on, "1") != 0) {
            fputs("flemma-sandbox-proxy: --test-hosts needs FLEMMA_SANDBOX_PROXY_TEST=1\n", stderr);
            return 2;
        }
        if (read_test_hosts(test_hosts, &shared.test_hosts) != 0) {
            fprintf(stderr, "flemma-sandbox-proxy: cannot read %s\n", test_hosts);
            return 2;
        }
    }
    fd = listen_at(listen_path);
    if (fd < 0) {
        fprintf(stderr, "flemma-sandbox-proxy: cannot listen at %s: %s\n", listen_path, strerror(errno));
        return 1;
    }
    if (ready_fd >= 0)
        close(ready_fd);
    else
        printf("listening %s %ld\n", listen_path, (long)getpid());
    fflush(stdout);
    rc = serve(fd, &shared);
    close(fd);
    unlink(listen_path);
    /* clients still running end with the process; their threads read the
     * lists, which stay for them */
    pthread_mutex_lock(&shared.lock);
    if (shared.clients == 0) {
        fs_vec_free(&shared.allow);
        fs_vec_free(&shared.deny);
        fs_vec_free(&shared.test_hosts);
        fs_vec_free(&shared.asked_yes);
        fs_vec_free(&shared.asked_no);
    }
    pthread_mutex_unlock(&shared.lock);
    return rc;
}
