#define _GNU_SOURCE
#include "seccomp.h"

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/seccomp.h>

#include "status.h"

#define TIOCSTI_CMD 0x5412u
#define TIOCLINUX_CMD 0x541Cu

/* The native deny list; a name the headers lack is not a syscall here. */
static const unsigned int NATIVE_DENIED[] = {
#ifdef __NR_ptrace
    __NR_ptrace,
#endif
#ifdef __NR_process_vm_readv
    __NR_process_vm_readv,
#endif
#ifdef __NR_process_vm_writev
    __NR_process_vm_writev,
#endif
#ifdef __NR_kexec_load
    __NR_kexec_load,
#endif
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
#ifdef __NR_init_module
    __NR_init_module,
#endif
#ifdef __NR_finit_module
    __NR_finit_module,
#endif
#ifdef __NR_delete_module
    __NR_delete_module,
#endif
#ifdef __NR_bpf
    __NR_bpf,
#endif
#ifdef __NR_perf_event_open
    __NR_perf_event_open,
#endif
#ifdef __NR_userfaultfd
    __NR_userfaultfd,
#endif
#ifdef __NR_keyctl
    __NR_keyctl,
#endif
#ifdef __NR_add_key
    __NR_add_key,
#endif
#ifdef __NR_request_key
    __NR_request_key,
#endif
#ifdef __NR_mount
    __NR_mount,
#endif
#ifdef __NR_umount
    __NR_umount,
#endif
#ifdef __NR_umount2
    __NR_umount2,
#endif
#ifdef __NR_pivot_root
    __NR_pivot_root,
#endif
#ifdef __NR_swapon
    __NR_swapon,
#endif
#ifdef __NR_swapoff
    __NR_swapoff,
#endif
    /* io_uring and the new mount API have one number on every architecture,
     * and older headers may lack the names. */
    425, 426, 427, /* io_uring_setup, io_uring_enter, io_uring_register */
    428, 429, 430, 431, 432, 433, /* open_tree, move_mount, fsopen, fsconfig, fsmount, fspick */
    442, /* mount_setattr */
};

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define NATIVE_NAME "x86_64"
/* x32 shares AUDIT_ARCH_X86_64; its numbers carry this bit. */
#define X32_BIT 0x40000000u
/* i386 binaries enter through int 0x80 with their own numbers
 * (asm/unistd_32.h; checked by the unit specs). */
static const unsigned int I386_DENIED[] = {
    26,  347, 348, 283, 128, 350, 129, 357, 336, 374, 288, 286, 287, 21,  22,  52,
    217, 87,  115, 425, 426, 427, 428, 429, 430, 431, 432, 433, 442,
};
#define I386_IOCTL 54u
/* timer_create, fcntl, fcntl64, prctl, clone, clone3 (asm/unistd_32.h;
 * checked by the unit specs) */
#define I386_ARG_RULES {259u, 55u, 221u, 172u, 120u, 435u}
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define NATIVE_NAME "aarch64"
#endif

#ifdef NATIVE_ARCH

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    struct sock_filter *prog;
    size_t len;
} program;

static void emit(program *p, unsigned short code, unsigned char jt, unsigned char jf, unsigned int k)
{
    struct sock_filter f;

    f.code = code;
    f.jt = jt;
    f.jf = jf;
    f.k = k;
    /* sizes are fixed at compile time and fit EXEC_SECCOMP_MAX (checked in
     * exec_seccomp_program), so this cannot overflow */
    p->prog[p->len++] = f;
}

static void deny_if(program *p, unsigned int nr)
{
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, nr);
    emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
}

/* the most instructions sigcont_rules() emits: clone3 2, timer_create 2,
 * fcntl and fcntl64 7 each, prctl 7, clone 6 */
#define ARG_RULES_MAX 31
#define NO_SYSCALL 0xffffffffu
#define F_SETSIG_CMD 10u
#define PR_SET_PDEATHSIG_OPT 1u
#define SIGCONT_NR 18u
#define ARG_LO(i) ((unsigned int)offsetof(struct seccomp_data, args[(i)]))
#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_EPERM (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

/* The syscalls whose arguments are looked at, NO_SYSCALL where an ABI
 * has none. */
typedef struct {
    unsigned int timer_create, fcntl, fcntl64, prctl, clone, clone3;
} arg_rule_numbers;

/* "if nr == NR: BODY" with BODY ending in returns; the number stays
 * loaded for what follows. emit_body adds the body's instructions. */
static void when_syscall(program *p, unsigned int nr, void (*emit_body)(program *, unsigned int), unsigned int k)
{
    size_t jump_at = p->len, body_start;

    if (nr == NO_SYSCALL)
        return;
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, nr);
    body_start = p->len;
    emit_body(p, k);
    p->prog[jump_at].jf = (unsigned char)(p->len - body_start);
}

/* "if the low word of argument A is X: if the low word of argument B is
 * SIGCONT, refuse": fcntl(fd, F_SETSIG, SIGCONT) (the signal of I/O
 * readiness: an inotify event the user's edit makes) and
 * prctl(PR_SET_PDEATHSIG, SIGCONT). The kernel reads both as ints. */
static void sigcont_pair_body(program *p, unsigned int a_b_x)
{
    unsigned int a = a_b_x >> 24, b = (a_b_x >> 16) & 0xffu, x = a_b_x & 0xffffu;

    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(a));
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, x);
    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(b));
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, SIGCONT_NR);
    emit(p, BPF_RET | BPF_K, 0, 0, RET_ALLOW);
    emit(p, BPF_RET | BPF_K, 0, 0, RET_EPERM);
}

/* clone whose exit signal (the low byte of its flags) is SIGCONT. */
static void clone_body(program *p, unsigned int unused)
{
    (void)unused;
    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(0));
    emit(p, BPF_ALU | BPF_AND | BPF_K, 0, 0, 0xffu);
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, SIGCONT_NR);
    emit(p, BPF_RET | BPF_K, 0, 0, RET_EPERM);
    emit(p, BPF_RET | BPF_K, 0, 0, RET_ALLOW);
}

/* "if nr == NR: fail with ENOSYS", as a kernel without it would: the C
 * library and programs fall back (clone3 to clone; coreutils' timeout
 * from timer_create to alarm, without a warning). */
static void absent_if(program *p, unsigned int nr)
{
    if (nr == NO_SYSCALL)
        return;
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, nr);
    emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
}

/* What would let the kernel send a held process SIGCONT while no process
 * of the sandbox runs (live_hold.c): a timer's signal, an I/O signal, a
 * parent's death signal, a child's exit signal. timer_create's event and
 * clone3's exit signal sit in structs this filter cannot read, so both
 * are absent (the C library passes an event even for the default
 * SIGALRM); setitimer and alarm stay (their signals are fixed). */
static void sigcont_rules(program *p, const arg_rule_numbers *nr)
{
    absent_if(p, nr->clone3);
    absent_if(p, nr->timer_create);
    when_syscall(p, nr->fcntl, sigcont_pair_body, (1u << 24) | (2u << 16) | F_SETSIG_CMD);
    when_syscall(p, nr->fcntl64, sigcont_pair_body, (1u << 24) | (2u << 16) | F_SETSIG_CMD);
    when_syscall(p, nr->prctl, sigcont_pair_body, (0u << 24) | (1u << 16) | PR_SET_PDEATHSIG_OPT);
    when_syscall(p, nr->clone, clone_body, 0);
}

/* The checks of one ABI, entered with the syscall number loaded; always
 * ends in a return. */
static void abi_body(program *p, const unsigned int *denied, size_t n, unsigned int ioctl_nr,
                     const arg_rule_numbers *rules, int x32)
{
    size_t i;

    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned int)offsetof(struct seccomp_data, nr));
#ifdef X32_BIT
    if (x32) {
        emit(p, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_BIT);
        emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | EPERM);
    }
#else
    (void)x32;
#endif
    for (i = 0; i < n; i++)
        deny_if(p, denied[i]);
    sigcont_rules(p, rules);
    /* ioctl: only the two terminal requests that inject input or steer
     * the console; the kernel reads the request as 32 bits, so do we. */
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 5, ioctl_nr);
    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned int)offsetof(struct seccomp_data, args[1]));
    deny_if(p, TIOCSTI_CMD);
    deny_if(p, TIOCLINUX_CMD);
    emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
}

/* Emits "if arch == value: that ABI's checks", else falls through. */
static void arch_section(program *p, unsigned int arch, const unsigned int *denied, size_t n,
                         unsigned int ioctl_nr, const arg_rule_numbers *rules, int x32)
{
    size_t jump_at = p->len, body_start;

    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, arch);
    body_start = p->len;
    abi_body(p, denied, n, ioctl_nr, rules, x32);
    p->prog[jump_at].jf = (unsigned char)(p->len - body_start);
}

const char *exec_seccomp_arch(void)
{
    return NATIVE_NAME;
}

int exec_seccomp_program(struct sock_filter *prog, size_t *len)
{
    program p;
    const arg_rule_numbers native_rules = {
        __NR_timer_create, __NR_fcntl, NO_SYSCALL, __NR_prctl, __NR_clone, 435u, /* clone3 */
    };
#ifdef I386_IOCTL
    const unsigned int i386_numbers[] = I386_ARG_RULES;
    const arg_rule_numbers i386_rules = {
        i386_numbers[0], i386_numbers[1], i386_numbers[2], i386_numbers[3], i386_numbers[4], i386_numbers[5],
    };
#endif

    /* arch checks, bodies of 2 per denied syscall plus the argument rules
     * (ARG_RULES_MAX) and a few fixed ones; an ABI's body stays under 256
     * instructions, the reach of a jump */
    if (2 * COUNT(NATIVE_DENIED) + ARG_RULES_MAX + 16
#ifdef I386_IOCTL
            + 2 * COUNT(I386_DENIED) + ARG_RULES_MAX + 16
#endif
        > EXEC_SECCOMP_MAX)
        return FS_EINVAL;
    p.prog = prog;
    p.len = 0;
    emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned int)offsetof(struct seccomp_data, arch));
    arch_section(&p, NATIVE_ARCH, NATIVE_DENIED, COUNT(NATIVE_DENIED), __NR_ioctl, &native_rules, 1);
#ifdef I386_IOCTL
    arch_section(&p, AUDIT_ARCH_I386, I386_DENIED, COUNT(I386_DENIED), I386_IOCTL, &i386_rules, 0);
#endif
    emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
    *len = p.len;
    return FS_OK;
}

#else

const char *exec_seccomp_arch(void)
{
    return NULL;
}

int exec_seccomp_program(struct sock_filter *prog, size_t *len)
{
    (void)prog;
    *len = 0;
    return FS_EINVAL;
}

#endif
