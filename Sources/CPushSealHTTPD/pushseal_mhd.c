#include "pushseal_mhd.h"

#include <string.h>

/* MHD_OPTION_UNESCAPE_CALLBACK: libmicrohttpd's own decoding (MHD_http_unescape), except that a
   path or query argument holding "%00" is left as sent. Decoded, the NUL would end the C string
   the access handler gets, so "DELETE /v1/devices/victim%00x" would act on "victim"; left as
   sent, the server sees "%00" and refuses the request (HTTPServer: 400 invalidURL). */
static size_t pushseal_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    for (const char *p = s; *p != '\0'; p++) {
        if (p[0] == '%' && p[1] == '0' && p[2] == '0') return strlen(s);
    }
    return MHD_http_unescape(s);
}

struct MHD_Daemon *pushseal_mhd_start(const pushseal_mhd_options *o,
                                      MHD_AccessHandlerCallback handler, void *handler_cls,
                                      MHD_RequestCompletedCallback completed, void *completed_cls) {
    struct MHD_OptionItem items[14];
    int n = 0;
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)o->address };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)pushseal_unescape, NULL };
    if (o->thread_pool_size > 1)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, o->thread_pool_size, NULL };
    if (o->connection_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL };
    if (o->per_ip_connection_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_connection_limit, NULL };
    if (o->connection_timeout_seconds > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_seconds, NULL };
    if (o->connection_memory_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL };
    if (o->tls_key_pem != NULL && o->tls_cert_pem != NULL) {
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key_pem };
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert_pem };
    }
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    return MHD_start_daemon(o->flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

uint16_t pushseal_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

unsigned int pushseal_mhd_connection_count(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}
