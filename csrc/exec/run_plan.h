/* What a run's check file asks for right before bwrap starts: the masks
 * that go in front of bwrap's "--" (run_plan.c). Shared by the host side
 * of a run (host_side.c) and the attach to a chat's live sandbox
 * (live_attach.c), which compares them with the sandbox's own. */
#ifndef EXEC_RUN_PLAN_H
#define EXEC_RUN_PLAN_H

#include <stddef.h>

#include "buf.h"
#include "check_plan.h"
#include "status.h"

/* at most this many secret files per project are masked (as the Lua side
 * plans for in bwrap's argument count) */
#define EXEC_SECRET_LIMIT 1000

/* Reads the check file at fd once into plan (check_plan.h; made by
 * exec_check_plan_init, the caller frees it), adds to the file what is
 * found now (the facts), and fills masks (bwrap options) and opened (the
 * descriptors the masks bind, close-on-exec); plan->mask_at says where in
 * bwrap's argv the masks go. FS_OK or an error in err; a scan that stopped
 * at its limit is said on stderr and recorded on records_fd. */
int exec_plan_masks(int fd, fs_vec *masks, fs_vec *opened, exec_check_plan *plan, int records_fd, fs_err *err);

#endif
