#ifndef CORE_SHA256_H
#define CORE_SHA256_H

#include <stddef.h>

/* SHA-256 (FIPS 180-4) of len bytes at data, as 64 lowercase hex digits
 * and a NUL in hex[65]. Names the chats' and live sandboxes' folders: the
 * same digits as Neovim's sha256() and sha256sum, without Neovim's
 * self-test on first use (milliseconds of the first tool call) or a
 * sha256sum process under plain LuaJIT. */
void core_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
