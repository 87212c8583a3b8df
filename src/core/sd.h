/* SPDX-License-Identifier: MIT
 * The two halves of the systemd service protocol hookd speaks: listening
 * sockets inherited through socket activation (LISTEN_FDS), and readiness
 * notifications (sd_notify over $NOTIFY_SOCKET). Hand-rolled rather than
 * libsystemd, so that start-up maps no extra library (see sd.c). */
#ifndef HK_SD_H
#define HK_SD_H

#include <stddef.h>

/* The first inherited descriptor, fixed by the protocol. */
#define HK_SD_LISTEN_FDS_START 3
/* More inherited sockets than this is a configuration error. */
#define HK_SD_MAX_LISTEN_FDS 16

/* Take the sockets passed by socket activation: `listen_pid` and
 * `listen_fds` are the values of LISTEN_PID and LISTEN_FDS (NULL when
 * unset; the configuration reads them). When LISTEN_PID names this
 * process, every descriptor from fd 3 to 3+LISTEN_FDS-1 must be a listening
 * TCP socket (AF_INET or AF_INET6, SOCK_STREAM, listen() called); they are
 * stored in fds[] (at most `max`), made close-on-exec and non-blocking.
 * LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed from the environment
 * in every case, so that nothing started later takes them for its own.
 * Returns the number of sockets (0: none passed, or passed to another
 * process), or -1 with a one-line message in err (the caller exits). */
int hk_sd_listen_fds(const char *listen_pid, const char *listen_fds, int *fds, int max, char *err,
                     size_t errlen);

/* Numeric host ("127.0.0.1", "::1") and port a bound socket listens on.
 * Returns 0, or -1 when it is not an AF_INET/AF_INET6 socket. */
int hk_sd_sockname(int fd, char *host, size_t hostlen, int *port);

/* Where hk_sd_notify sends: the value of NOTIFY_SOCKET (NULL: nowhere).
 * Call before the threads start. */
void hk_sd_notify_socket(const char *path);
/* Send `state` ("READY=1", "STOPPING=1", "STATUS=...", newline-separated
 * assignments) to the service manager over the socket set above. A path
 * starting with '@' is in the abstract namespace. Returns 1 when sent, 0
 * when no socket is set, or a negative errno; never blocks (datagram,
 * MSG_DONTWAIT). Safe to call from any thread. */
int hk_sd_notify(const char *state);

#endif
