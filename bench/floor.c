/* SPDX-License-Identifier: MIT
 * floor: the least an HTTP server can do, for the cold-start benchmark's
 * floor on this machine. Statically linked, no event loop, no parsing:
 * listens on 127.0.0.1:$PORT and answers every connection with one 200 and
 * a close. hookd's exec-to-first-200 is read against this figure. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    const char *p = getenv("PORT");
    int port = p ? atoi(p) : 8080;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        return 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0)
        return 1;
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    for (;;) {
        int c = accept(fd, NULL, NULL);
        if (c < 0)
            continue;
        char buf[4096];
        if (read(c, buf, sizeof buf) > 0 && write(c, resp, sizeof resp - 1) < 0) {
            /* The client went away: nothing to do. */
        }
        close(c);
    }
}
