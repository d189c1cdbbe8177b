/* Variable expansion for policy paths: $VAR, ${VAR}, ${VAR:-default}, a
 * leading ~ or ~/, and the Flemma URNs (urn:flemma:cwd, ...). Values come
 * only from the caller's lookup, never from the process environment, so
 * results are deterministic. */
#ifndef CORE_EXPAND_H
#define CORE_EXPAND_H

#include <stddef.h>

#include "buf.h"

/* Returns 1 and sets *value / *value_len when name is set, 0 when unset. */
typedef int (*fs_lookup_fn)(void *ctx, const char *name, size_t name_len, const char **value,
                            size_t *value_len);

/* Expands in into out. An unset or empty variable without a default is
 * FS_EUNSET, with its name in unset_name (never an empty string in the
 * result: "$X/foo" must not become "/foo"). Bad syntax is FS_EINVAL. */
int core_expand(const char *in, size_t len, fs_lookup_fn lookup, void *ctx, fs_buf *out,
              fs_buf *unset_name, fs_err *err);

#endif
