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

/* The checks of one ABI, entered with the syscall number loaded; always
 * ends in a return. */
static void abi_body(program *p, const unsigned int *denied, size_t n, unsigned int ioctl_nr, int x32)
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
                         unsigned int ioctl_nr, int x32)
{
    size_t jump_at = p->len, body_start;

    emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, arch);
    body_start = p->len;
    abi_body(p, denied, n, ioctl_nr, x32);
    p->prog[jump_at].jf = (unsigned char)(p->len - body_start);
}

const char *exec_seccomp_arch(void)
{
    return NATIVE_NAME;
}

int exec_seccomp_program(struct sock_filter *prog, size_t *len)
{
    program p;

    /* arch checks, bodies of 2 per denied syscall plus a few fixed ones */
    if (2 * COUNT(NATIVE_DENIED) + 16
#ifdef I386_IOCTL
            + 2 * COUNT(I386_DENIED) + 16
#endif
        > EXEC_SECCOMP_MAX)
        return FS_EINVAL;
    p.prog = prog;
    p.len = 0;
    emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned int)offsetof(struct seccomp_data, arch));
    arch_section(&p, NATIVE_ARCH, NATIVE_DENIED, COUNT(NATIVE_DENIED), __NR_ioctl, 1);
#ifdef I386_IOCTL
    arch_section(&p, AUDIT_ARCH_I386, I386_DENIED, COUNT(I386_DENIED), I386_IOCTL, 0);
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
