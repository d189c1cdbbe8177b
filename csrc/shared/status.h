/* Return codes shared by the core's pure functions. */
#ifndef FS_STATUS_H
#define FS_STATUS_H

enum {
    FS_OK = 0,
    FS_ENOMEM = -1, /* allocation failed */
    FS_EINVAL = -2, /* bad data: the fs_err says which */
    FS_EUNSET = -3, /* expansion named a variable that is unset or empty */
    FS_ESYS = -4    /* a system call failed: the fs_err says which and why */
};

#endif
