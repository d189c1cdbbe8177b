#define _GNU_SOURCE
#include "tree_index.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

static const char HEADER[] = "flemma-sandbox tree 1";
static const char END[] = "end";
#define MAX_FILE_BYTES ((size_t)256 << 20)

void fs_tree_init(fs_tree_index *t)
{
    fs_buf_init(&t->bytes);
    t->dirs = NULL;
    t->len = 0;
    t->slots = NULL;
    t->nslots = 0;
    t->file_mtime = 0;
}

void fs_tree_free(fs_tree_index *t)
{
    fs_buf_free(&t->bytes);
    free(t->dirs);
    free(t->slots);
    fs_tree_init(t);
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The NUL-terminated token at *at, moving past it; NULL at the end or
 * when the bytes end without a NUL. */
static const char *token(const char *data, size_t len, size_t *at)
{
    const char *t, *nul;

    if (*at >= len)
        return NULL;
    t = data + *at;
    nul = memchr(t, '\0', len - *at);
    if (!nul)
        return NULL;
    *at = (size_t)(nul - data) + 1;
    return t;
}

/* The next space-separated decimal number in *s, at most max. */
static int next_number(const char **s, unsigned long long max, unsigned long long *out)
{
    char *end;

    if (**s < '0' || **s > '9')
        return -1;
    errno = 0;
    *out = strtoull(*s, &end, 10);
    if (errno != 0 || *out > max || (*end != ' ' && *end != '\0'))
        return -1;
    *s = *end == ' ' ? end + 1 : end;
    return 0;
}

static int parse_numbers(const char *field, fs_tree_dir *d)
{
    unsigned long long v[9];
    const unsigned long long big = (unsigned long long)LLONG_MAX;
    const unsigned long long max[9] = {ULLONG_MAX, ULLONG_MAX, big, 999999999, big, 999999999, 1, SIZE_MAX, SIZE_MAX};
    size_t i;

    for (i = 0; i < 9; i++)
        if (next_number(&field, max[i], &v[i]) != 0)
            return -1;
    if (*field != '\0')
        return -1;
    d->dev = v[0];
    d->ino = v[1];
    d->mtime_s = (long long)v[2];
    d->mtime_ns = (long long)v[3];
    d->ctime_s = (long long)v[4];
    d->ctime_ns = (long long)v[5];
    d->racy = (unsigned)v[6];
    d->nmatch = (size_t)v[7];
    d->nsub = (size_t)v[8];
    return 0;
}

static int index_slots(fs_tree_index *t)
{
    size_t i, n = 16;

    while (n < t->len * 2)
        n *= 2;
    t->slots = calloc(n, sizeof(*t->slots));
    if (!t->slots)
        return FS_ENOMEM;
    t->nslots = n;
    for (i = 0; i < t->len; i++) {
        size_t at = (size_t)fnv1a(t->dirs[i].rel, strlen(t->dirs[i].rel)) & (n - 1);

        while (t->slots[at] != 0)
            at = (at + 1) & (n - 1);
        t->slots[at] = i + 1;
    }
    return FS_OK;
}

/* The records in data; -1 when data is not a whole index for key. */
static int parse_records(fs_tree_index *t, const char *data, size_t len, const char *key)
{
    size_t at = 0, cap = 0;
    const char *head = token(data, len, &at), *k = token(data, len, &at);

    if (!head || !k || strcmp(head, HEADER) != 0 || strcmp(k, key) != 0)
        return -1;
    for (;;) {
        const char *rel = token(data, len, &at), *numbers;
        fs_tree_dir d;
        size_t i;

        if (!rel)
            return -1;
        if (strcmp(rel, END) == 0)
            return at == len ? 0 : -1;
        numbers = token(data, len, &at);
        if (!numbers || parse_numbers(numbers, &d) != 0 || d.nmatch > len || d.nsub > len - d.nmatch)
            return -1;
        d.rel = rel;
        d.names = data + at;
        for (i = 0; i < d.nmatch + d.nsub; i++)
            if (!token(data, len, &at))
                return -1;
        d.span = (size_t)(data + at - rel);
        if (t->len == cap) {
            fs_tree_dir *grown;

            cap = cap ? cap * 2 : 64;
            grown = realloc(t->dirs, cap * sizeof(*grown));
            if (!grown)
                return -2;
            t->dirs = grown;
        }
        t->dirs[t->len++] = d;
    }
}

int fs_tree_parse(fs_tree_index *t, char *bytes, size_t len, const char *key)
{
    int rc;

    fs_tree_free(t);
    t->bytes.data = bytes;
    t->bytes.len = len;
    t->bytes.cap = len + 1;
    rc = parse_records(t, bytes, len, key);
    if (rc == 0 && index_slots(t) == FS_OK)
        return FS_OK;
    free(t->dirs);
    t->dirs = NULL;
    t->len = 0;
    return rc == -2 || rc == 0 ? FS_ENOMEM : FS_OK;
}

int fs_tree_load(fs_tree_index *t, const char *file, const char *key)
{
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    char *bytes;
    size_t got = 0;
    int rc;

    fs_tree_free(t);
    if (fd < 0)
        return FS_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_FILE_BYTES) {
        close(fd);
        return FS_OK;
    }
    bytes = malloc((size_t)st.st_size + 1);
    if (!bytes) {
        close(fd);
        return FS_ENOMEM;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, bytes + got, (size_t)st.st_size - got);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    bytes[got] = '\0';
    rc = fs_tree_parse(t, bytes, got, key);
    if (t->len > 0)
        t->file_mtime = (long long)st.st_mtime;
    return rc;
}

const fs_tree_dir *fs_tree_find(const fs_tree_index *t, const char *rel)
{
    size_t at;

    if (t->nslots == 0)
        return NULL;
    at = (size_t)fnv1a(rel, strlen(rel)) & (t->nslots - 1);
    while (t->slots[at] != 0) {
        const fs_tree_dir *d = &t->dirs[t->slots[at] - 1];

        if (strcmp(d->rel, rel) == 0)
            return d;
        at = (at + 1) & (t->nslots - 1);
    }
    return NULL;
}

int fs_tree_unchanged(const fs_tree_dir *d, const struct stat *st)
{
    return !d->racy && d->dev == (unsigned long long)st->st_dev && d->ino == (unsigned long long)st->st_ino &&
           d->mtime_s == (long long)st->st_mtim.tv_sec && d->mtime_ns == (long long)st->st_mtim.tv_nsec &&
           d->ctime_s == (long long)st->st_ctim.tv_sec && d->ctime_ns == (long long)st->st_ctim.tv_nsec;
}

static int add_token(fs_buf *out, const char *s)
{
    return fs_buf_append(out, s, strlen(s) + 1) == 0 ? FS_OK : FS_ENOMEM;
}

int fs_tree_begin(fs_buf *out, const char *key)
{
    return add_token(out, HEADER) == FS_OK && add_token(out, key) == FS_OK ? FS_OK : FS_ENOMEM;
}

int fs_tree_add(fs_buf *out, const char *rel, const struct stat *st, unsigned racy, size_t nmatch, size_t nsub)
{
    char numbers[256];

    snprintf(numbers, sizeof(numbers), "%llu %llu %lld %lld %lld %lld %u %zu %zu", (unsigned long long)st->st_dev,
             (unsigned long long)st->st_ino, (long long)st->st_mtim.tv_sec, (long long)st->st_mtim.tv_nsec,
             (long long)st->st_ctim.tv_sec, (long long)st->st_ctim.tv_nsec, racy, nmatch, nsub);
    return add_token(out, rel) == FS_OK && add_token(out, numbers) == FS_OK ? FS_OK : FS_ENOMEM;
}

int fs_tree_add_names(fs_buf *out, const char *names, size_t count)
{
    size_t i, n = 0;

    for (i = 0; i < count; i++)
        n += strlen(names + n) + 1;
    return fs_buf_append(out, names, n) == 0 ? FS_OK : FS_ENOMEM;
}

int fs_tree_add_same(fs_buf *out, const fs_tree_dir *d)
{
    return fs_buf_append(out, d->rel, d->span) == 0 ? FS_OK : FS_ENOMEM;
}

int fs_tree_end(fs_buf *out)
{
    return add_token(out, END);
}

int fs_tree_save(const char *file, const fs_buf *out)
{
    char tmp[4096];
    size_t done = 0;
    int fd;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", file, (long)getpid()) >= sizeof(tmp))
        return FS_EINVAL;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return FS_ESYS;
    while (done < out->len) {
        ssize_t n = write(fd, out->data + done, out->len - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    if (close(fd) != 0 || done != out->len || rename(tmp, file) != 0) {
        unlink(tmp);
        return FS_ESYS;
    }
    return FS_OK;
}

int fs_tree_file(const char *dir, const char *key, char *out, size_t n)
{
    int len = snprintf(out, n, "%s/tree-%016llx.idx", dir, (unsigned long long)fnv1a(key, strlen(key)));

    return len < 0 || (size_t)len >= n ? -1 : 0;
}
