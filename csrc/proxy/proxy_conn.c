#define _GNU_SOURCE
#include "proxy_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fd_io.h"
#include "net_rules.h"
#include "proxy_relay.h"
#include "record.h"
#include "status.h"
#include "tls_hello.h"

#define HEAD_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 10000
#define THREAD_STACK (256 * 1024)
#define ASK_TIMEOUT_MS 120000 /* the user may be looking elsewhere; the command waits */
#define MAX_ASKS 16             /* questions one command may cause: no flood of windows */

/* Writes to a peer are best effort (fs_write_all): one that went away ends
 * its connection anyway, and proxy_main ignores SIGPIPE. */

typedef struct {
    proxy_shared *s;
    int client, upstream;
    char head[FS_PROXY_HEAD_MAX];
    size_t have; /* bytes in head, the head and what came after it */
    fs_proxy_request req;
    char why[1024]; /* why it was refused, for the reply and stdout */
} conn;

int proxy_shared_init(proxy_shared *s)
{
    memset(s, 0, sizeof(*s));
    fs_vec_init(&s->allow);
    fs_vec_init(&s->deny);
    fs_vec_init(&s->test_hosts);
    fs_vec_init(&s->asked_yes);
    fs_vec_init(&s->asked_no);
    s->idle_ms = 300000;
    s->max_clients = 256;
    s->records_fd = -1;
    return pthread_mutex_init(&s->lock, NULL);
}


/* The line on stdout (the run's stderr, for people) and the record (for
 * Neovim) of a refusal: kind is "blocked" or "unreachable". */
static void say_refused(conn *c, const char *kind)
{
    const char *host = c->req.host[0] ? c->req.host : "?";

    pthread_mutex_lock(&c->s->lock);
    printf("flemma-sandbox: %s %s: %s\n", kind, host, c->why);
    fflush(stdout);
    fs_record(c->s->records_fd, kind, "host", host, "why", c->why, FS_RECORD_END);
    pthread_mutex_unlock(&c->s->lock);
}

/* The line on stdout and the record when a rule refused it, then the
 * error reply. blocked: the rules refused it ("blocked HOST: why" on the
 * log); else a 502 says "unreachable HOST: why" there, so the result can
 * tell the model the host was allowed but did not answer. The record comes
 * first: once the reply is out, the command may end and its records be
 * read before this thread runs again. */
static void refuse(conn *c, int code, const char *reason, int blocked)
{
    char text[2048];
    int n;

    if (blocked || code == 502)
        say_refused(c, blocked ? "blocked" : "unreachable");
    n = snprintf(text, sizeof(text),
                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n"
                 "flemma-sandbox: %s\n",
                 code, reason, strlen(c->why) + 17, c->why);
    if (n > 0)
        fs_write_all(c->client, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
}

/* Reads until the head is whole: 0, or -1 with c->why set. */
static int read_head(conn *c)
{
    long long deadline = fs_now_ms() + HEAD_TIMEOUT_MS;
    fs_err err;

    for (;;) {
        struct pollfd p;
        ssize_t got;
        int rc = fs_proxy_parse(c->head, c->have, &c->req, &err);

        if (rc == FS_OK)
            return 0;
        if (rc != 1) {
            snprintf(c->why, sizeof(c->why), "bad request: %.400s", err.msg);
            return -1;
        }
        p.fd = c->client;
        p.events = POLLIN;
        if (fs_now_ms() >= deadline || poll(&p, 1, (int)(deadline - fs_now_ms())) <= 0) {
            snprintf(c->why, sizeof(c->why), "no whole request within %d s", HEAD_TIMEOUT_MS / 1000);
            return -1;
        }
        got = recv(c->client, c->head + c->have, sizeof(c->head) - c->have, 0);
        if (got <= 0) {
            snprintf(c->why, sizeof(c->why), "the client closed before a whole request");
            return -1;
        }
        c->have += (size_t)got;
    }
}

static int connect_within(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), soerr = 0;
    socklen_t l = sizeof(soerr);
    struct pollfd p;

    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    p.fd = fd;
    p.events = POLLOUT;
    if (poll(&p, 1, CONNECT_TIMEOUT_MS) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l) != 0 || soerr) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* The test map's address for the host, if the map names it; *relaxed
 * when the rule on loopback does not apply to it. */
static const char *test_address(const proxy_shared *s, const char *host, int *relaxed)
{
    size_t i;

    *relaxed = 0;
    for (i = 0; i + 2 < s->test_hosts.len; i += 3)
        if (strcmp(s->test_hosts.items[i], host) == 0) {
            *relaxed = s->test_hosts.items[i + 2][0] == '\0';
            return s->test_hosts.items[i + 1];
        }
    return NULL;
}

/* Connects to the first address of the host the rules let it reach:
 * 0, or -1 with c->why set (*blocked when a rule, not the network, said no). */
static int open_upstream(conn *c, int *blocked)
{
    struct addrinfo hints, *list = NULL, *a;
    int relaxed, rc, kind = FS_ADDR_PUBLIC;
    const char *test = test_address(c->s, c->req.host, &relaxed);
    char port[8];

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = test || fs_host_is_ip(c->req.host) ? AI_NUMERICHOST : 0;
    snprintf(port, sizeof(port), "%u", c->req.port);
    rc = getaddrinfo(test ? test : c->req.host, port, &hints, &list);
    if (rc != 0) {
        snprintf(c->why, sizeof(c->why), "cannot resolve %.255s: %.200s", c->req.host, gai_strerror(rc));
        return -1;
    }
    for (a = list; a; a = a->ai_next) {
        const unsigned char *bytes =
            a->ai_family == AF_INET ? (const unsigned char *)&((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr
                                    : (const unsigned char *)&((struct sockaddr_in6 *)(void *)a->ai_addr)->sin6_addr;
        int k = fs_addr_kind(a->ai_family, bytes);

        /* a test name reaches its own address; anything else only a
         * public one, or one an allow entry names */
        if (!relaxed && k != FS_ADDR_PUBLIC && !fs_addr_named(a->ai_family, bytes, &c->s->allow)) {
            kind = k;
            continue;
        }
        c->upstream = connect_within(a->ai_addr, a->ai_addrlen);
        if (c->upstream >= 0)
            break;
    }
    freeaddrinfo(list);
    if (c->upstream >= 0)
        return 0;
    if (kind != FS_ADDR_PUBLIC) {
        *blocked = 1;
        snprintf(c->why, sizeof(c->why), "%.255s resolves to a %s address, which no allow_domains entry names",
                 c->req.host, fs_addr_kind_name(kind));
    } else {
        snprintf(c->why, sizeof(c->why), "cannot connect to %.255s port %u", c->req.host, c->req.port);
    }
    return -1;
}

/* Whether the header line at p (up to eol) is one of the connection's own,
 * which the proxy replaces with "Connection: close". */
static int hop_header(const char *p, const char *eol)
{
    static const char *const names[] = {"connection:", "proxy-connection:", "keep-alive:"};
    size_t i, n = (size_t)(eol - p);

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n >= strlen(names[i]) && strncasecmp(p, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

/* Sends the forwarded request's head: the method, the path (the target
 * without scheme and host), the headers as the client wrote them but for
 * the connection's own, "Connection: close" (one request per connection:
 * a second one, with another Host, never follows on it), and as much of
 * the body as came with the head. Returns the body bytes still to relay. */
static long long send_head(conn *c)
{
    const fs_proxy_request *r = &c->req;
    size_t target_end = r->target_at + r->target_len, line_end, p, after;
    long long body = r->content_length < 0 ? 0 : r->content_length, sent;
    char line[32];
    int n = snprintf(line, sizeof(line), "%s ", r->method);

    fs_write_all(c->upstream, line, (size_t)n);
    if (r->origin_at == target_end)
        fs_write_all(c->upstream, "/", 1);
    else
        fs_write_all(c->upstream, c->head + r->origin_at, target_end - r->origin_at);
    line_end = (size_t)((const char *)memmem(c->head + target_end, r->head_len - target_end, "\r\n", 2) - c->head);
    fs_write_all(c->upstream, c->head + target_end, line_end + 2 - target_end);
    for (p = line_end + 2; p + 2 < r->head_len;) {
        size_t eol = (size_t)((const char *)memmem(c->head + p, r->head_len - p, "\r\n", 2) - c->head);

        if (!hop_header(c->head + p, c->head + eol))
            fs_write_all(c->upstream, c->head + p, eol + 2 - p);
        p = eol + 2;
    }
    fs_write_all(c->upstream, "Connection: close\r\n\r\n", 21);
    after = c->have - r->head_len;
    sent = (long long)after < body ? (long long)after : body;
    fs_write_all(c->upstream, c->head + r->head_len, (size_t)sent);
    return body - sent;
}

/* Through a CONNECT tunnel, the client's TLS hello must name the host the
 * tunnel goes to (or none): else it reaches, on an allowed server (a CDN
 * serves many names), a name the rules never saw. Reads the hello into
 * c->head (moved to its start) and checks it: 0, or -1 with c->why set.
 * Bytes that are not TLS go on unchecked. */
static int check_server_name(conn *c)
{
    long long deadline = fs_now_ms() + HEAD_TIMEOUT_MS;
    char name[256];

    c->have -= c->req.head_len;
    memmove(c->head, c->head + c->req.head_len, c->have);
    for (;;) {
        struct pollfd p;
        ssize_t got;
        int rc = proxy_tls_server_name((const unsigned char *)c->head, c->have, name, sizeof(name));

        if (rc == -1 || (rc == 0 && (name[0] == '\0' || strcmp(name, c->req.host) == 0)))
            return 0;
        if (rc == 0) {
            snprintf(c->why, sizeof(c->why), "the TLS server name %.255s is not the tunnel's host %.255s", name,
                     c->req.host);
            return -1;
        }
        if (rc == -2 || c->have == sizeof(c->head)) {
            snprintf(c->why, sizeof(c->why), "a TLS hello to %.255s that cannot be read", c->req.host);
            return -1;
        }
        p.fd = c->client;
        p.events = POLLIN;
        if (fs_now_ms() >= deadline || poll(&p, 1, (int)(deadline - fs_now_ms())) <= 0 ||
            (got = recv(c->client, c->head + c->have, sizeof(c->head) - c->have, 0)) <= 0) {
            snprintf(c->why, sizeof(c->why), "no TLS hello to %.255s within %d s", c->req.host,
                     HEAD_TIMEOUT_MS / 1000);
            return -1;
        }
        c->have += (size_t)got;
    }
}

/* Puts the question "ask HOST PORT" to Neovim's socket and reads the
 * answer line; gives up when the client goes away meanwhile. 1: "once" or
 * "always", 0: "deny" (both kept for this proxy's run), -1: no answer, with
 * c->why set. */
static int ask_user(conn *c)
{
    char line[320], answer[16];
    size_t got = 0;
    long long deadline = fs_now_ms() + ASK_TIMEOUT_MS;
    fs_vec *kept;
    int fd, n, yes, full;

    pthread_mutex_lock(&c->s->lock);
    full = c->s->asks >= MAX_ASKS;
    if (!full)
        c->s->asks++;
    pthread_mutex_unlock(&c->s->lock);
    if (full) {
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and this command asked %d times already",
                 c->req.host, MAX_ASKS);
        return -1;
    }
    fd = fs_unix_connect(c->s->ask_path);
    if (fd < 0) {
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and Neovim could not be asked (%s)",
                 c->req.host, strerror(errno));
        return -1;
    }
    n = snprintf(line, sizeof(line), "ask %s %u\n", c->req.host, c->req.port);
    fs_write_all(fd, line, (size_t)n);
    while (got < sizeof(answer) - 1 && !memchr(answer, '\n', got)) {
        struct pollfd p[2];
        ssize_t r;

        p[0].fd = fd;
        p[0].events = POLLIN;
        /* only a client that closed both ways has left: one that shut
         * down its sending side may still wait for the reply */
        p[1].fd = c->client;
        p[1].events = 0;
        if (fs_now_ms() >= deadline || poll(p, 2, (int)(deadline - fs_now_ms())) <= 0) {
            snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and the user did not answer within %d s",
                     c->req.host, ASK_TIMEOUT_MS / 1000);
            close(fd);
            return -1;
        }
        if (p[1].revents & (POLLHUP | POLLERR)) {
            snprintf(c->why, sizeof(c->why), "the client left while the user was asked about %.255s", c->req.host);
            close(fd);
            return -1;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        r = recv(fd, answer + got, sizeof(answer) - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    answer[got] = '\0';
    if (strcmp(answer, "once\n") == 0 || strcmp(answer, "always\n") == 0)
        yes = 1;
    else if (strcmp(answer, "deny\n") == 0)
        yes = 0;
    else {
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and Neovim gave no answer", c->req.host);
        return -1;
    }
    kept = yes ? &c->s->asked_yes : &c->s->asked_no;
    pthread_mutex_lock(&c->s->lock);
    if (!fs_vec_contains(kept, c->req.host))
        (void)fs_vec_push_str(kept, c->req.host); /* out of memory: it holds for this connection only */
    pthread_mutex_unlock(&c->s->lock);
    if (!yes)
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and the user refused it when asked",
                 c->req.host);
    return yes;
}

/* Whether a host no rule lets through may go on after all: only a name
 * (never an IP literal) with --ask, and only when the user says so. The
 * answer is kept for the rest of this proxy's run. */
static int asked_allowed(conn *c)
{
    int yes, no;

    if (!c->s->ask_path || fs_host_is_ip(c->req.host))
        return 0;
    pthread_mutex_lock(&c->s->lock);
    yes = fs_vec_contains(&c->s->asked_yes, c->req.host);
    no = fs_vec_contains(&c->s->asked_no, c->req.host);
    pthread_mutex_unlock(&c->s->lock);
    if (yes)
        return 1;
    if (no) {
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains, and the user refused it when asked",
                 c->req.host);
        return 0;
    }
    return ask_user(c) == 1;
}

static void *serve_client(void *arg)
{
    conn *c = arg;
    const char *rule;
    int blocked = 0;

    if (read_head(c) != 0) {
        refuse(c, 400, "Bad Request", 0);
        goto done;
    }
    if (!fs_host_allowed(c->req.host, &c->s->allow, &c->s->deny, &rule)) {
        /* deny_domains wins over any answer: only an unlisted name is asked */
        snprintf(c->why, sizeof(c->why), "%.255s is not in allow_domains", c->req.host);
        if (rule)
            snprintf(c->why, sizeof(c->why), "%.255s is refused by deny_domains entry %.300s", c->req.host, rule);
        if (rule || !asked_allowed(c)) {
            refuse(c, 403, "Forbidden", 1);
            goto done;
        }
    }
    if (open_upstream(c, &blocked) != 0) {
        refuse(c, blocked ? 403 : 502, blocked ? "Forbidden" : "Bad Gateway", blocked);
        goto done;
    }
    if (c->req.is_connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

        fs_write_all(c->client, ok, sizeof(ok) - 1);
        if (check_server_name(c) != 0) {
            /* the tunnel is open already: no reply, the line and a close */
            say_refused(c, "blocked");
            goto done;
        }
        proxy_say_reached(c->s, c->req.host, c->req.port);
        /* the hello (or what else the client sent first) goes on */
        fs_write_all(c->upstream, c->head, c->have);
        proxy_relay(c->client, c->upstream, -1, c->s->idle_ms);
    } else if (c->req.chunked) {
        snprintf(c->why, sizeof(c->why), "a request body of unknown length (Transfer-Encoding) is not forwarded: "
                                         "send Content-Length, or use https");
        refuse(c, 411, "Length Required", 0);
    } else {
        proxy_say_reached(c->s, c->req.host, c->req.port);
        proxy_relay(c->client, c->upstream, send_head(c), c->s->idle_ms);
    }
done:
    if (c->upstream >= 0)
        close(c->upstream);
    close(c->client);
    pthread_mutex_lock(&c->s->lock);
    c->s->clients--;
    pthread_mutex_unlock(&c->s->lock);
    free(c);
    return NULL;
}

void proxy_start(proxy_shared *s, int client)
{
    conn *c = calloc(1, sizeof(*c));
    pthread_attr_t attr;
    pthread_t t;
    int full;

    pthread_mutex_lock(&s->lock);
    full = s->clients >= s->max_clients;
    if (!full && c)
        s->clients++;
    pthread_mutex_unlock(&s->lock);
    if (!c || full) {
        free(c);
        close(client);
        return;
    }
    c->s = s;
    c->client = client;
    c->upstream = -1;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    if (pthread_create(&t, &attr, serve_client, c) != 0) {
        close(client);
        free(c);
        pthread_mutex_lock(&s->lock);
        s->clients--;
        pthread_mutex_unlock(&s->lock);
    }
    pthread_attr_destroy(&attr);
}
