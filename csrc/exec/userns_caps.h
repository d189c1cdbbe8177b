/* Caps the host helper sets in the sandbox's own user namespace before the
 * command starts: how many inotify instances and watches the sandbox may
 * take. The kernel charges what a namespace uses to every namespace above
 * it, so the user's own file watchers keep what the sandbox cannot take.
 *
 * bwrap gives the sandbox's first process id on --info-fd and waits on
 * --block-fd right before it runs the command; in between, a child of
 * the helper joins that process's user namespace (the helper's user owns
 * it, so it gets every capability there and nowhere else) and writes
 * /proc/sys/user/max_inotify_{instances,watches}, which inside that
 * namespace are its own. That is bwrap's first namespace or the nested
 * one it makes inside it (--disable-userns, /dev/pts), depending on how
 * far it got: either holds everything below it. The command, without
 * capabilities, cannot raise them again. What cannot be set stops the
 * command (fail closed). */
#ifndef EXEC_USERNS_CAPS_H
#define EXEC_USERNS_CAPS_H

#include <stddef.h>

typedef struct {
    long inotify_instances; /* > 0: at most this many in the sandbox */
    long inotify_watches;   /* > 0: likewise */
    int info_read, info_write;   /* bwrap's --info-fd: it writes the child's pid */
    int block_read, block_write; /* bwrap's --block-fd (a socket pair): it waits for a byte */
    char info_text[16], block_text[16];
} exec_userns_gate;

/* Opens the two pipes when a cap is asked for; the helper's own ends are
 * close-on-exec. 0, or -1 with errno. With no cap asked nothing is opened
 * and exec_userns_gate_words gives no words. */
int exec_userns_gate_open(exec_userns_gate *g, long instances, long watches);

/* The options for bwrap ("--info-fd", N, "--block-fd", M) in words[0..3];
 * how many (0 or 4). */
int exec_userns_gate_words(exec_userns_gate *g, char **words);

/* In the child that runs bwrap, before exec: bwrap's ends are inherited. */
void exec_userns_gate_child(const exec_userns_gate *g);

/* In the helper after the fork: sets the caps in the namespace of the
 * process bwrap names, then lets bwrap run the command. 0 when done (or
 * nothing asked), 1 when bwrap ended before the command could run (nothing
 * to cap: the caller collects bwrap's exit), -1 with why filled when a cap
 * could not be set: the caller must stop bwrap, which is still waiting. */
int exec_userns_gate_apply(exec_userns_gate *g, char *why, size_t n);

/* Closes what is left open. */
void exec_userns_gate_close(exec_userns_gate *g);

#endif
