// See include/pushseal_tls.h.
#define _GNU_SOURCE 1  // strptime, timegm
#include "pushseal_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct pushseal_tls_context { SSL_CTX *ctx; };
struct pushseal_tls_connection { SSL *ssl; int fd; };

static void set_error(char *error, size_t error_size, const char *what) {
    if (error == NULL || error_size == 0) return;
    unsigned long e = ERR_get_error();
    if (e != 0) {
        char text[200];
        ERR_error_string_n(e, text, sizeof text);
        snprintf(error, error_size, "%s: %s", what, text);
    } else {
        snprintf(error, error_size, "%s", what);
    }
    ERR_clear_error();
}

pushseal_tls_context *pushseal_tls_context_new(const char *ca_file, char *error, size_t error_size) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) { set_error(error, error_size, "SSL_CTX_new failed"); return NULL; }
    static const unsigned char alpn[] = { 2, 'h', '2' };
    int ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1
        && SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn) == 0;  // 0 is success here
    if (ok && ca_file != NULL) {
        ok = SSL_CTX_load_verify_locations(ctx, ca_file, NULL) == 1;
        if (!ok) { set_error(error, error_size, "cannot load the CA file"); SSL_CTX_free(ctx); return NULL; }
    } else if (ok) {
        ok = SSL_CTX_set_default_verify_paths(ctx) == 1;
    }
    if (!ok) { set_error(error, error_size, "cannot configure TLS"); SSL_CTX_free(ctx); return NULL; }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    // RFC 9113 §9.2: TLS 1.2 for HTTP/2 without renegotiation and compression.
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
    pushseal_tls_context *context = malloc(sizeof *context);
    if (context == NULL) { SSL_CTX_free(ctx); set_error(error, error_size, "out of memory"); return NULL; }
    context->ctx = ctx;
    return context;
}

void pushseal_tls_context_free(pushseal_tls_context *context) {
    if (context == NULL) return;
    SSL_CTX_free(context->ctx);
    free(context);
}

int pushseal_tcp_connect(const char *host, int port) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    struct addrinfo *found = NULL;
    if (getaddrinfo(host, service, &hints, &found) != 0 || found == NULL) return -EHOSTUNREACH;
    // The first address whose connect starts (an unroutable IPv6 address fails at once with
    // ENETUNREACH: the next one is tried).
    int e = EHOSTUNREACH;
    for (struct addrinfo *a = found; a != NULL; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) { e = errno; continue; }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        int r;
        do { r = connect(fd, a->ai_addr, a->ai_addrlen); } while (r < 0 && errno == EINTR);
        if (r == 0 || errno == EINPROGRESS) { freeaddrinfo(found); return fd; }
        e = errno;
        close(fd);
    }
    freeaddrinfo(found);
    return -e;
}

int pushseal_tcp_connect_result(int fd) {
    int e = 0;
    socklen_t n = sizeof e;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &n) < 0) return errno;
    return e;
}

void pushseal_tcp_close(int fd) {
    if (fd >= 0) close(fd);
}

int pushseal_tcp_local_port(int fd) {
    struct sockaddr_storage a;
    socklen_t n = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &n) < 0) return 0;
    if (a.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&a)->sin_port);
    if (a.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return 0;
}

pushseal_tls_connection *pushseal_tls_connection_new(pushseal_tls_context *context, int fd, const char *host) {
    SSL *ssl = SSL_new(context->ctx);
    if (ssl == NULL) { close(fd); return NULL; }
    unsigned char address[16];
    int literal = inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
    int ok = SSL_set_fd(ssl, fd) == 1;
    if (ok && literal) {
        // RFC 6066 §3: no SNI for an IP literal; the certificate must name the address.
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
    } else if (ok) {
        ok = SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
    }
    pushseal_tls_connection *c = ok ? malloc(sizeof *c) : NULL;
    if (c == NULL) { SSL_free(ssl); close(fd); return NULL; }
    SSL_set_connect_state(ssl);
    c->ssl = ssl;
    c->fd = fd;
    return c;
}

void pushseal_tls_connection_free(pushseal_tls_connection *connection) {
    if (connection == NULL) return;
    SSL_free(connection->ssl);
    close(connection->fd);
    free(connection);
}

/// An OpenSSL result as one of the codes.
static int status(SSL *ssl, int r) {
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ: return PUSHSEAL_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return PUSHSEAL_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: ERR_clear_error(); return PUSHSEAL_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        // End of stream without close_notify (OpenSSL 3: SSL_R_UNEXPECTED_EOF_WHILE_READING, or r == 0).
        return PUSHSEAL_TLS_CLOSED;
    case SSL_ERROR_SSL: {
        unsigned long e = ERR_peek_last_error();
        ERR_clear_error();
        if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return PUSHSEAL_TLS_CLOSED;
        return PUSHSEAL_TLS_ERROR;
    }
    default: ERR_clear_error(); return PUSHSEAL_TLS_ERROR;
    }
}

int pushseal_tls_handshake(pushseal_tls_connection *connection) {
    SSL *ssl = connection->ssl;
    int r = SSL_do_handshake(ssl);
    if (r != 1) {
        int s = status(ssl, r);
        if (s == PUSHSEAL_TLS_WANT_READ || s == PUSHSEAL_TLS_WANT_WRITE) return s;
        if (SSL_get_verify_result(ssl) != X509_V_OK) return PUSHSEAL_TLS_VERIFY_FAILED;
        return s == PUSHSEAL_TLS_CLOSED ? PUSHSEAL_TLS_ERROR : s;
    }
    if (SSL_get_verify_result(ssl) != X509_V_OK || SSL_get0_peer_certificate(ssl) == NULL) return PUSHSEAL_TLS_VERIFY_FAILED;
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &protocol, &length);
    if (length != 2 || protocol == NULL || memcmp(protocol, "h2", 2) != 0) return PUSHSEAL_TLS_NO_H2;
    return PUSHSEAL_TLS_OK;
}

ssize_t pushseal_tls_read(pushseal_tls_connection *connection, void *buffer, size_t size) {
    size_t n = 0;
    int r = SSL_read_ex(connection->ssl, buffer, size, &n);
    if (r == 1) return (ssize_t)n;
    return status(connection->ssl, r);
}

ssize_t pushseal_tls_write(pushseal_tls_connection *connection, const void *buffer, size_t size) {
    size_t n = 0;
    int r = SSL_write_ex(connection->ssl, buffer, size, &n);
    if (r == 1) return (ssize_t)n;
    int s = status(connection->ssl, r);
    return s == PUSHSEAL_TLS_CLOSED ? PUSHSEAL_TLS_ERROR : s;
}

void pushseal_tls_shutdown(pushseal_tls_connection *connection) {
    (void)SSL_shutdown(connection->ssl);
    ERR_clear_error();
    shutdown(connection->fd, SHUT_WR);
}

const char *pushseal_tls_version(pushseal_tls_connection *connection) {
    return SSL_get_version(connection->ssl);
}

int64_t pushseal_http_date_seconds(const char *text) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0') return -1;
    time_t t = timegm(&tm);
    return t < 0 ? -1 : (int64_t)t;
}
