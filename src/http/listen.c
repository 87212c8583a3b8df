/* SPDX-License-Identifier: MIT
 * Listening sockets: bind one per loop (SO_REUSEPORT spreads connections
 * over them), or take over a socket a service manager passed. */
#include "http/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The address to bind: an IP literal directly (the usual case, and
 * getaddrinfo is a lot of code to fault in at start), else a name. */
static int listen_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen)
{
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "invalid HOOKD_HOST=\"%s\": %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int hk_listen_open(const char *host, int port, int *bound, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (listen_addr(host, port, &ss, &len, err, errlen) < 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Socket activation hands over one socket per address, already bound and
 * listening; SO_REUSEPORT cannot split it. Every loop assigned to it
 * accepts from the same queue through its own dup(), so each loop owns
 * (and closes) its descriptor, while the socket itself lives on in the
 * service manager when hookd exits, queueing connections until the next
 * start. */
int hk_listen_inherited(int fd, int *bound, char *err, size_t errlen)
{
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (d < 0) {
        snprintf(err, errlen, "cannot dup inherited socket %d: %s", fd, strerror(errno));
        return -1;
    }
    if (bound) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(d, (struct sockaddr *)&ss, &sl) == 0)
            *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                    : ((struct sockaddr_in *)&ss)->sin_port);
    }
    return d;
}
