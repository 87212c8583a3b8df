/* SPDX-License-Identifier: MIT
 * A fixed-rate Prometheus scraper for the overhead check: GET /q/metrics at
 * `rate` per second in total for `seconds`, spread over `conns` keep-alive
 * connections (one thread each, absolute schedule, no catch-up bursts), so
 * the rate holds even when each scrape waits behind a saturated server.
 * Prints scrapes completed, bytes per scrape and scrape latency p50/p99.
 * usage: scraper HOST PORT RATE SECONDS [CONNS] */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct worker {
    pthread_t t;
    double start, period, secs;
    double *lat;
    size_t n, max, late;
    long bytes;
    int failed;
};

static const char *host;
static int port;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

/* Read one response with Content-Length; returns its total size or -1. */
static long read_response(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    long want = -1;
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = 0;
        if (want < 0) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end)
                continue;
            char *cl = strcasestr(buf, "\r\nContent-Length: ");
            if (!cl || cl > end)
                return -1;
            want = (long)(end + 4 - buf) + atol(cl + 18);
        }
        if ((long)len >= want)
            return want;
    }
}

static void *run(void *arg)
{
    struct worker *w = arg;
    static const char req[] = "GET /q/metrics HTTP/1.1\r\nHost: bench\r\n\r\n";
    size_t cap = 4 << 20;
    char *buf = malloc(cap);
    int fd = connect_to();
    while (w->n < w->max) {
        double due = w->start + (double)w->n * w->period;
        double t = now_s();
        if (t - w->start >= w->secs)
            break;
        if (due > t) {
            double d = due - t;
            struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
            nanosleep(&ts, NULL);
        } else if (t - due > w->period) {
            w->late++;
        }
        double t0 = now_s();
        if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
            w->failed = 1;
            break;
        }
        long got = read_response(fd, buf, cap);
        if (got < 0) {
            w->failed = 1;
            break;
        }
        w->lat[w->n++] = now_s() - t0;
        w->bytes = got;
    }
    close(fd);
    free(buf);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s HOST PORT RATE SECONDS [CONNS]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    double rate = atof(argv[3]), secs = atof(argv[4]);
    int conns = argc == 6 ? atoi(argv[5]) : 20;
    if (conns < 1 || rate <= 0 || secs <= 0)
        return 2;
    struct worker *w = calloc((size_t)conns, sizeof *w);
    double start = now_s() + 0.01, per = rate / conns;
    for (int i = 0; i < conns; i++) {
        /* Staggered so that the connections' scrapes interleave evenly. */
        w[i].start = start + (double)i / rate;
        w[i].period = 1.0 / per;
        w[i].secs = secs;
        w[i].max = (size_t)(per * secs) + 1;
        w[i].lat = calloc(w[i].max, sizeof *w[i].lat);
        pthread_create(&w[i].t, NULL, run, &w[i]);
    }
    size_t total = 0, late = 0;
    long bytes = 0;
    int failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(w[i].t, NULL);
        total += w[i].n;
        late += w[i].late;
        failed |= w[i].failed;
        if (w[i].bytes)
            bytes = w[i].bytes;
    }
    double elapsed = now_s() - start;
    double *all = calloc(total + 1, sizeof *all);
    size_t k = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof *all, cmp);
    printf("scrapes %zu in %.1fs (%.0f/s over %d connections), %ld bytes each, late %zu%s, latency p50 %.3fms "
           "p99 %.3fms\n",
           total, elapsed, (double)total / elapsed, conns, bytes, late, failed ? ", FAILED" : "",
           total ? all[total / 2] * 1e3 : 0, total ? all[total * 99 / 100] * 1e3 : 0);
    free(all);
    free(w);
    return failed;
}
