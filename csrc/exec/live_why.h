/* Why a chat's sandbox was started again (live_attach.c): the policy's
 * settings that changed, with their old and new values ("policy.network:
 * false -> host"), from the settings the attach was given
 * (--policy-fields) and those its keeper was started with (the live
 * folder's "fields", kept as "fields.old" when it was replaced); else a
 * file protected or hidden now that was not, by its path ("masks.old");
 * else what the
 * protection rests on (a folder bound from the host made again). */
#ifndef EXEC_LIVE_WHY_H
#define EXEC_LIVE_WHY_H

#include <sys/types.h>
#include <time.h>

#include "buf.h"

/* Says why on stderr and records it on records_fd ("restarted", why):
 * fields is this call's "NAME\0VALUE\0...", mask_set its masks
 * (exec_live_mask_set), dirfd the live folder. */
void exec_live_say_restart(int dirfd, const fs_buf *fields, const fs_buf *mask_set, int records_fd);

/* A call whose sandbox ended while its command ran: says so on stderr
 * and, unless the keeper recorded its own reason (keeper_stopped), in a
 * "stopped" record (reason sandbox_ended); why, when a restart since
 * (the call began at since) stopped it: the restart's (the live folder's
 * "ended.why", which exec_live_say_restart keeps). */
void exec_live_say_ended(int dirfd, time_t since, int records_fd, int keeper_stopped);

/* What the keeper and bwrap said (its log, on stderr), for a sandbox that
 * never ran the call or ended during it, once the keeper is done. */
void exec_live_tell_log(int dirfd);

/* Appends to records_fd what the keeper of dirfd recorded since from (the
 * size of its "keeper.records" when the call began): when ended (its
 * sandbox ended during the call) or it stopped for this call, once it is
 * done, with what its check moved. 1 when that holds a "stopped" record.
 * Called after the call's own check (exec_check_after). */
int exec_live_take_records(int dirfd, off_t from, int records_fd, int ended);

#endif
