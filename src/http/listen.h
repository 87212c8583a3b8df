/* SPDX-License-Identifier: MIT
 * Listening sockets for the server's loops. */
#ifndef HK_LISTEN_H
#define HK_LISTEN_H

#include <stddef.h>

/* A non-blocking TCP socket bound to host:port (an IP literal, or a name
 * resolved once) with SO_REUSEPORT, listening. *bound receives the port
 * (useful with port 0). Returns the descriptor (the caller owns it), or -1
 * with a one-line reason in err. */
int hk_listen_open(const char *host, int port, int *bound, char *err, size_t errlen);

/* A descriptor of its own (dup) for a listening socket a service manager
 * passed, so that each loop owns and closes one while the socket lives on
 * in the manager. *bound (may be NULL) receives its port. Returns the
 * descriptor, or -1 with a reason in err. */
int hk_listen_inherited(int fd, int *bound, char *err, size_t errlen);

#endif
