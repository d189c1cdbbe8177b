/* libFuzzer target: the proxy's request head parser, its host rules and
 * its reading of a TLS hello's server name (csrc/shared/net_rules.h). Properties:
 * a parsed head lies inside the input, its offsets are in order, its host
 * is lower case with no byte the parser forbids, and the rules give one
 * answer for it; a server name read is printable lower-case ASCII. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/shared/buf.h"
#include "../csrc/shared/net_rules.h"
#include "../csrc/proxy/tls_hello.h"
#include "../csrc/shared/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_proxy_request r;
    fs_err err;
    fs_vec allow, deny;
    const char *rule;
    size_t i;
    char name[256];
    int rc = proxy_tls_server_name(data, size, name, sizeof(name));

    if (rc == 0)
        for (i = 0; name[i]; i++)
            if (name[i] < 0x21 || name[i] > 0x7e || isupper((unsigned char)name[i]))
                abort();
    rc = fs_proxy_parse((const char *)data, size, &r, &err);
    if (rc != FS_OK)
        return 0;
    if (r.head_len > size || r.target_at + r.target_len > r.head_len || r.origin_at < r.target_at ||
        r.origin_at > r.target_at + r.target_len || r.port == 0 || r.port > 65535 || r.host[0] == '\0')
        abort();
    for (i = 0; r.host[i]; i++)
        if (isupper((unsigned char)r.host[i]) || r.host[i] == '@' || r.host[i] == '/' || r.host[i] == ' ')
            abort();
    fs_vec_init(&allow);
    fs_vec_init(&deny);
    if (fs_vec_push_str(&allow, r.host) == 0 && fs_vec_push_str(&allow, "*.example.com") == 0 &&
        fs_vec_push_str(&allow, "10.0.0.0/8") == 0) {
        /* a host always matches itself, and a deny of itself wins */
        if (!fs_host_allowed(r.host, &allow, &deny, &rule))
            abort();
        if (fs_vec_push_str(&deny, r.host) == 0 && fs_host_allowed(r.host, &allow, &deny, &rule))
            abort();
    }
    fs_vec_free(&allow);
    fs_vec_free(&deny);
    return 0;
}
