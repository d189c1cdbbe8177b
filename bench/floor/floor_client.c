/* make bench's floor of a warm call (bench/calls_bench.lua), the client:
 * no libc and no ld.so (-nostdlib -static, x86-64 Linux only). It
 * connects to the unix socket argv[1], sends argv[2..] (NUL-separated)
 * with its fds 0-2 as SCM_RIGHTS, reads the 4-byte status floor_server
 * answers and exits with it. Not part of the plugin: it only shows what
 * a call that does nothing but attach costs. */
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#if !defined(__x86_64__) || !defined(__linux__)
#error "the floor client is x86-64 Linux only"
#endif

static long sys3(long n, long a, long b, long c)
{
    long r;

    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

static void leave(long code)
{
    for (;;)
        sys3(SYS_exit_group, code, 0, 0);
}

/* what gcc may call for loops and struct copies */
void *memset(void *to, int c, size_t n);
void *memcpy(void *to, const void *from, size_t n);

void *memset(void *to, int c, size_t n)
{
    volatile unsigned char *p = to;

    while (n--)
        *p++ = (unsigned char)c;
    return to;
}

void *memcpy(void *to, const void *from, size_t n)
{
    volatile unsigned char *p = to;
    const unsigned char *q = from;

    while (n--)
        *p++ = *q++;
    return to;
}

static size_t text_len(const char *s)
{
    size_t n = 0;

    while (s[n])
        n++;
    return n;
}

/* Called from _start with the initial stack: argc, then argv. */
void floor_main(long *stack);

void floor_main(long *stack)
{
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    char words[8192];
    struct sockaddr_un addr;
    size_t used = 0, len;
    int i, fd, status = 0;
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(3 * sizeof(int))];
    } ctl;
    struct iovec iov;
    struct msghdr msg;
    int *fds;

    if (argc < 3)
        leave(2);
    for (i = 2; i < argc; i++) {
        len = text_len(argv[i]) + 1;
        if (used + len > sizeof(words))
            leave(2);
        memcpy(words + used, argv[i], len);
        used += len;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    len = text_len(argv[1]);
    if (len >= sizeof(addr.sun_path))
        leave(2);
    memcpy(addr.sun_path, argv[1], len);
    fd = (int)sys3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || sys3(SYS_connect, fd, (long)&addr, sizeof(addr)) < 0)
        leave(125);
    memset(&msg, 0, sizeof(msg));
    memset(&ctl, 0, sizeof(ctl));
    iov.iov_base = words;
    iov.iov_len = used;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.space;
    msg.msg_controllen = sizeof(ctl.space);
    ctl.h.cmsg_level = SOL_SOCKET;
    ctl.h.cmsg_type = SCM_RIGHTS;
    ctl.h.cmsg_len = CMSG_LEN(3 * sizeof(int));
    fds = (int *)CMSG_DATA(&ctl.h);
    fds[0] = 0;
    fds[1] = 1;
    fds[2] = 2;
    if (sys3(SYS_sendmsg, fd, (long)&msg, MSG_NOSIGNAL) != (long)used)
        leave(125);
    if (sys3(SYS_read, fd, (long)&status, sizeof(status)) != (long)sizeof(status))
        leave(125);
    leave(status);
}

__asm__(".globl _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call floor_main\n"
        "  hlt\n");
