/* SPDX-License-Identifier: MIT
 * systemd's socket activation and readiness protocols, written out by hand.
 * libsystemd would do the same in a few hundred bytes of its own code, but
 * linking it maps libsystemd (825 KiB on Debian 12) and six more libraries
 * (libcap, libgcrypt, libgpg-error, liblzma, libzstd, liblz4) into every
 * hookd process at start, whether it runs under systemd or not, and into
 * the image: start-up time, RSS and image size are what hookd is measured
 * on, and the protocol is two environment variables and one datagram. */
#include "core/sd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int parse_uint(const char *s, long max, long *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static void unset_listen_env(void)
{
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
}

/* A TCP socket on which listen() was called, or an error message. */
static const char *check_listener(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return "not an open descriptor";
    if (!S_ISSOCK(st.st_mode))
        return "not a socket";
    int v = 0;
    socklen_t len = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
        return "not a stream socket (ListenStream= is needed)";
    len = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || (v != AF_INET && v != AF_INET6))
        return "not a TCP socket (AF_INET or AF_INET6 is needed)";
    len = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0 || !v)
        return "not listening (Accept=yes is not supported)";
    return NULL;
}

int hk_sd_listen_fds(const char *spid, const char *sn, int *fds, int max, char *err, size_t errlen)
{
    long pid = 0, n = 0;
    int rc = 0;
    if (!spid && !sn)
        goto out;
    /* Variables meant for another process (a parent that exec'd us without
     * clearing them, say): not ours to use. */
    if (parse_uint(spid, 0x7fffffff, &pid) < 0 || pid != (long)getpid())
        goto out;
    if (parse_uint(sn, 0x7fffffff, &n) < 0) {
        snprintf(err, errlen, "invalid LISTEN_FDS=\"%s\": expected a number of sockets", sn ? sn : "");
        rc = -1;
        goto out;
    }
    if (n > max) {
        snprintf(err, errlen, "invalid LISTEN_FDS=%ld: at most %d inherited sockets are supported", n, max);
        rc = -1;
        goto out;
    }
    for (int i = 0; i < (int)n; i++) {
        int fd = HK_SD_LISTEN_FDS_START + i;
        const char *why = check_listener(fd);
        if (why) {
            snprintf(err, errlen, "invalid LISTEN_FDS=%ld: fd %d is %s", n, fd, why);
            rc = -1;
            goto out;
        }
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0) {
            snprintf(err, errlen, "LISTEN_FDS: fd %d: %s", fd, strerror(errno));
            rc = -1;
            goto out;
        }
        fds[i] = fd;
    }
    rc = (int)n;
out:
    unset_listen_env();
    return rc;
}

int hk_sd_sockname(int fd, char *host, size_t hostlen, int *port)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return -1;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        *port = ntohs(a->sin_port);
        return inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)hostlen) ? 0 : -1;
    }
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        *port = ntohs(a->sin6_port);
        return inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)hostlen) ? 0 : -1;
    }
    return -1;
}

static char notify_path[110];

void hk_sd_notify_socket(const char *path)
{
    notify_path[0] = '\0';
    if (path && strlen(path) < sizeof notify_path)
        memcpy(notify_path, path, strlen(path) + 1);
}

int hk_sd_notify(const char *state)
{
    const char *path = notify_path;
    if (!*path)
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t plen = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || plen >= sizeof sa.sun_path)
        return -EINVAL;
    memcpy(sa.sun_path, path, plen);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
    if (path[0] == '@')
        sa.sun_path[0] = 0; /* abstract: the name is exactly plen bytes, no terminator */
    else
        salen++;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 1;
    ssize_t n;
    do
        n = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa, salen);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        rc = -errno;
    close(fd);
    return rc;
}
