// Swift cannot call C variadic functions: this wraps MHD_start_daemon and MHD_get_daemon_info
// (both variadic) with fixed arguments for PushSealHTTP. Nothing else lives here.
#ifndef PUSHSEAL_MHD_H
#define PUSHSEAL_MHD_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// What pushseal_mhd_start passes to MHD_start_daemon as options.
typedef struct {
    /// MHD_FLAG bits (MHD_USE_...).
    unsigned int flags;
    /// The address to bind (IPv4 or IPv6 with its port; port 0 for any free one).
    const struct sockaddr *address;
    /// Worker threads in MHD's pool (MHD_OPTION_THREAD_POOL_SIZE); 0 or 1 for one thread.
    unsigned int thread_pool_size;
    /// Open connections at most (MHD_OPTION_CONNECTION_LIMIT).
    unsigned int connection_limit;
    /// Open connections from one IP address at most (MHD_OPTION_PER_IP_CONNECTION_LIMIT); 0 for no limit.
    unsigned int per_ip_connection_limit;
    /// Idle seconds before a connection is closed (MHD_OPTION_CONNECTION_TIMEOUT).
    unsigned int connection_timeout_seconds;
    /// Bytes per connection for the request line and headers (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    size_t connection_memory_limit;
    /// PEM private key and certificate chain for HTTPS (both NULL for plain HTTP).
    const char *tls_key_pem;
    const char *tls_cert_pem;
} pushseal_mhd_options;

/// MHD_start_daemon with the options of `o` (MHD_OPTION_STRICT_FOR_CLIENT 1 always); NULL on failure.
struct MHD_Daemon *pushseal_mhd_start(const pushseal_mhd_options *o,
                                      MHD_AccessHandlerCallback handler, void *handler_cls,
                                      MHD_RequestCompletedCallback completed, void *completed_cls);

/// The port the daemon listens on (MHD_DAEMON_INFO_BIND_PORT), 0 if unknown.
uint16_t pushseal_mhd_bound_port(struct MHD_Daemon *daemon);

/// The number of open connections (MHD_DAEMON_INFO_CURRENT_CONNECTIONS).
unsigned int pushseal_mhd_connection_count(struct MHD_Daemon *daemon);
#endif
