/* A protected or hidden name of a chat's live sandbox that the host
 * replaced (a save by rename: Neovim's :write, a formatter, git) while
 * nothing in the sandbox ran: protected again by the next call before its
 * command runs, so the sandbox lives on.
 *
 * Why it is needed: a read-only bind or a /dev/null mask holds the file
 * that was at the name when the sandbox started; when the host renames
 * another file over the name, the kernel takes that mount away in the
 * sandbox too, which then sees the new file unprotected.
 *
 * Why it holds: the keeper (host_side.c) lets such a change be only while
 * the live folder says "quiet" (the last call ended with nothing of its
 * left running, or all of it held: live_hold.c), so nothing in the
 * sandbox runs until a call continues it. A call removes "quiet" first,
 * then compares the names with the live folder's "protected" list
 * (written by the keeper at its start: how each is protected and what
 * was there) and binds each changed one again in the sandbox's mount
 * namespace, entered from a child of the call (setns), before it sends
 * its request. A change after "quiet" is gone stops the sandbox (the
 * keeper's watch: fail closed), and a call does not leave the sandbox
 * quiet when a name changed while it ran. What cannot be protected again
 * in place (a folder, a symlink, a file the sandbox does not see at its
 * host path) starts the sandbox again, saying why. */
#ifndef EXEC_LIVE_REPROTECT_H
#define EXEC_LIVE_REPROTECT_H

#include <stddef.h>

/* Before a call joins the sandbox kept in dirfd: 0 when every name of
 * "protected" is protected as at the start, after binding each that
 * changed again (was_quiet: the call found "quiet" and removed it), with
 * a "reprotected" record each on records_fd; -1 with why set when one
 * changed and cannot be (then the sandbox is to start again). */
int exec_reprotect_before_call(int dirfd, int was_quiet, int records_fd, char *why, size_t n);

/* After a call: 1 when a name of "protected" is another file than the
 * list says (replaced while the call ran: the sandbox must not be left
 * quiet, so the keeper stops it), else 0. */
int exec_reprotect_changed(int dirfd);

/* When a call joins the sandbox kept in dirfd: the live folder's "quiet"
 * goes first, so a name replaced from then on stops the sandbox (the
 * keeper's watch) rather than waiting for this call, then
 * exec_reprotect_before_call. -1 with why: "quiet" is put back as it
 * was (the keeper that ends takes what appeared at a protected name for
 * the host's), and the sandbox is to start again. */
int exec_reprotect_join(int dirfd, int records_fd, char *why, size_t n);

/* Says why the sandbox starts again when exec_reprotect_join could not
 * protect a name in place: on stderr, in a "restarted" record, and in
 * "ended.why" for the calls it stops (live_why.h). */
void exec_reprotect_say_restart(int dirfd, int records_fd, const char *why);

#endif
