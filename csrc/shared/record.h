/* Records: what the helper and the proxy report to Neovim, one JSON object
 * per line ({"type":"moved","from":"...","to":"..."}), next to the
 * sentences they print on stderr for people. Lua reads the records
 * (lua/flemma_sandbox/run/records.lua); nothing parses the sentences. The
 * types and their fields are listed in ARCHITECTURE.md. */
#ifndef FS_RECORD_H
#define FS_RECORD_H

/* The end of a record's key and value list: a null pointer of the type
 * the list holds (a bare NULL may be an int in a variadic call). */
#define FS_RECORD_END ((const char *)0)

/* Writes one record on fd in one write(2) (O_APPEND keeps lines whole
 * between processes): its type, then the key and value strings that follow,
 * up to FS_RECORD_END. Values are escaped for JSON; bytes above 0x7f pass as
 * they are. Nothing happens when fd < 0; a record too long for the line
 * limit or a failed write is dropped (the stderr sentence still says it).
 * 0, or -1. */
int fs_record(int fd, const char *type, ...);

/* The records file of a run, from its check file's name ("NAME.check" or
 * "NAME.running" to "NAME.records"), opened to append when Neovim made it
 * (it makes it for the runs it reads; for other callers nothing is
 * written): the descriptor, or -1. */
int fs_record_open_for(const char *check_file);

/* At most this many bytes per record line. */
#define FS_RECORD_MAX 8192

#endif
