/* SPDX-License-Identifier: MIT
 * coldstart: exec a server and poll it with a tight loopback client until
 * GET <path> answers 200; print the time from the exec to that answer, with
 * the server's RSS/PSS/USS a moment later, as one JSON line. The server is
 * forked before the clock starts and waits to be released into execve.
 *
 *   coldstart [-p port] [-u /q/health/ready] [-s settle_ms] [-n runs] [-i pause_us]
 *             [-c server_cpu] [-t timeout_ms] [-o] [-f] -- cmd args...
 *
 *   -o  capture the server's stdout and report its first line that says
 *       "started in" (else its first line) as "startedLine", and the time in
 *       it ("started in 0.003874s") as "appStartMs"
 *   -f  right after the first 200, time one POST /api/webhooks and then one
 *       GET /api/webhooks, each on a fresh connection ("firstPostMs", "firstGetMs");
 *       after the memory figures, nine more of each, alternating, for their
 *       medians ("steadyPostMs", "steadyGetMs")
 *   -a TOKEN  right after the first 200 (and -f's requests), make a session
 *       with the API token (POST /api/sessions, "sessionMs") and time two
 *       GET /api/webhooks?limit=20 with it (Authorization: Bearer hks_...),
 *       each on a fresh connection ("firstAuthGetMs", "secondAuthGetMs"),
 *       and the time from exec to the first one's end ("execToFirstAuthGetMs")
 *
 * Each run starts the command afresh (SIGTERM, then SIGKILL after 5 s).
 * Between refused probes the poller pauses pause_us (default 100 us). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define STEADY 9   /* -f: requests after the first ones, for the steady-state medians */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (n odd), which it sorts. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int status_of(const char *buf, ssize_t n)
{
    if (n >= 12 && strncmp(buf, "HTTP/1.", 7) == 0)
        return atoi(buf + 9);
    return -1;
}

/* One GET; returns the status code, or -1 when the server is not there yet. */
static int probe(int port, const char *path)
{
    int fd = dial(port);
    if (fd < 0)
        return -1;
    int status = -1;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n)
        goto out;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    if (r > 0) {
        buf[r] = 0;
        status = status_of(buf, r);
    }
out:
    close(fd);
    return status;
}

/* One whole request on a fresh connection, read to EOF (Connection: close).
 * Returns the milliseconds from before connect() to EOF, or -1; *status gets
 * the response's status code. */
static double request(int port, const char *method, const char *path, const char *body, int *status)
{
    char req[1024], buf[16384];
    *status = -1;
    double t0 = now_ms();
    int fd = dial(port);
    if (fd < 0)
        return -1;
    int n;
    if (body)
        n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, strlen(body), body);
    else
        n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                     method, path);
    double ms = -1;
    if (n <= 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n)
        goto out;
    ssize_t r, first = 0;
    while ((r = read(fd, buf, sizeof buf - 1)) > 0) {
        if (!first) {
            buf[r] = 0;
            *status = status_of(buf, r);
            first = r;
        }
    }
    if (r == 0 && first)
        ms = now_ms() - t0;
out:
    close(fd);
    return ms;
}

/* Like request(), with an extra header line (`header`, without CRLF; may be
 * NULL) and the whole response kept in out (NUL-terminated, cut at outn). */
static double request_h(int port, const char *method, const char *path, const char *header, const char *body,
                        int *status, char *out, size_t outn)
{
    char req[1024];
    *status = -1;
    if (outn)
        out[0] = 0;
    double t0 = now_ms();
    int fd = dial(port);
    if (fd < 0)
        return -1;
    char content[96] = "";
    if (body)
        snprintf(content, sizeof content, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                 strlen(body));
    else if (strcmp(method, "GET") != 0)
        snprintf(content, sizeof content, "Content-Length: 0\r\n");
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s%s%s\r\n%s",
                     method, path, header ? header : "", header ? "\r\n" : "", content, body ? body : "");
    double ms = -1;
    size_t got = 0;
    if (n <= 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n)
        goto out;
    ssize_t r;
    char buf[16384];
    while ((r = read(fd, buf, sizeof buf)) > 0) {
        size_t k = (size_t)r;
        if (got + k + 1 > outn)
            k = outn > got + 1 ? outn - got - 1 : 0;
        memcpy(out + got, buf, k);
        got += k;
        out[got] = 0;
    }
    if (r == 0 && got) {
        ms = now_ms() - t0;
        *status = status_of(out, (ssize_t)got);
    }
out:
    close(fd);
    return ms;
}

/* The string value of "key" in a flat JSON object (no escapes expected),
 * into out; 0, or -1 when absent. */
static int json_field(const char *text, const char *key, char *out, size_t outn)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= outn)
        return -1;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = 0;
    return 0;
}

/* Sum a field of /proc/PID/smaps_rollup or /proc/PID/status (kB). */
static long proc_kb(pid_t pid, const char *file, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long total = 0;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':')
            total += atol(line + fl + 1);
    fclose(f);
    return total;
}

/* The server's stdout when -o is given: the first line that says "started
 * in" (Quarkus prints a banner first), else the first line. */
struct outcap {
    int fd;
    char cur[512];   /* the line being read */
    size_t curlen;
    char line[512];  /* the line reported */
    int have;        /* 0: none, 1: the first line, 2: a "started in" line */
};

static void outcap_line(struct outcap *oc)
{
    oc->cur[oc->curlen] = 0;
    int started = strstr(oc->cur, "started in") != NULL;
    if (oc->have == 0 || (oc->have == 1 && started)) {
        memcpy(oc->line, oc->cur, oc->curlen + 1);
        oc->have = started ? 2 : 1;
    }
    oc->curlen = 0;
}

/* Drain the server's stdout for wait_ms (0: what is there now), keeping the
 * first line: a chatty server must never block on a full pipe. */
static void outcap_pump(struct outcap *oc, int wait_ms)
{
    if (oc->fd < 0)
        return;
    double until = now_ms() + wait_ms;
    for (;;) {
        char tmp[4096];
        ssize_t r = read(oc->fd, tmp, sizeof tmp);
        for (ssize_t k = 0; k < r && oc->have < 2; k++) {
            if (tmp[k] == '\n')
                outcap_line(oc);
            else if (oc->curlen < sizeof oc->cur - 1)
                oc->cur[oc->curlen++] = tmp[k];
        }
        if (r > 0)
            continue;
        if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            /* EOF or error: nothing more will come. */
            if (oc->curlen)
                outcap_line(oc);
            close(oc->fd);
            oc->fd = -1;
            return;
        }
        double left = until - now_ms();
        if (left <= 0)
            return;
        struct pollfd p = {.fd = oc->fd, .events = POLLIN};
        poll(&p, 1, (int)left + 1);
    }
}

/* "hookd 0.1.0 started in 0.003874s. Listening on: ..." -> 3.874; -1 if absent. */
static double started_ms(const char *line)
{
    const char *p = strstr(line, "started in ");
    if (!p)
        return -1;
    char *end;
    double s = strtod(p + 11, &end);
    if (end == p + 11)
        return -1;
    if (strncmp(end, "ms", 2) == 0)
        return s;
    return s * 1000;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, const char *key, double v)
{
    if (v < 0)
        fprintf(f, ",\"%s\":null", key);
    else
        fprintf(f, ",\"%s\":%.3f", key, v);
}

int main(int argc, char **argv)
{
    int port = 8080, runs = 1, settle_ms = 1000, pause_us = 100, server_cpu = -1, timeout_ms = 30000;
    int capture = 0, first_req = 0;
    const char *path = "/q/health/ready";
    const char *api_token = NULL;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-o") == 0) {
            capture = 1;
            continue;
        }
        if (strcmp(argv[i], "-f") == 0) {
            first_req = 1;
            continue;
        }
        if (i + 1 >= argc)
            break;
        if (strcmp(argv[i], "-p") == 0)
            port = atoi(argv[++i]);
        else if (strcmp(argv[i], "-u") == 0)
            path = argv[++i];
        else if (strcmp(argv[i], "-n") == 0)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "-s") == 0)
            settle_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "-i") == 0)
            pause_us = atoi(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0)
            server_cpu = atoi(argv[++i]);
        else if (strcmp(argv[i], "-t") == 0)
            timeout_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "-a") == 0)
            api_token = argv[++i];
    }
    if (i >= argc - 1) {
        fprintf(stderr, "usage: coldstart [-p port] [-u path] [-n runs] [-s settle_ms] [-i pause_us] [-c server_cpu]"
                        " [-t timeout_ms] [-o] [-f] [-a api_token] -- cmd args...\n");
        return 2;
    }
    char **cmd = argv + i + 1;
    if (probe(port, path) >= 0) {
        fprintf(stderr, "coldstart: something already answers on port %d\n", port);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    for (int run = 0; run < runs; run++) {
        struct outcap oc = {.fd = -1};
        int pfd[2] = {-1, -1};
        if (capture && pipe2(pfd, O_CLOEXEC) < 0) {
            perror("coldstart: pipe");
            return 1;
        }
        /* The clock measures from exec: the child is forked first, pins
         * itself to the server's CPU and waits on a pipe; the clock starts
         * when it is released to call execve. The launcher's own fork and
         * CPU migration stay out of the figure (a supervisor pays them
         * whatever it starts). */
        int go[2];
        if (pipe2(go, O_CLOEXEC) < 0) {
            perror("coldstart: pipe");
            return 1;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("coldstart: fork");
            return 1;
        }
        if (pid == 0) {
            if (server_cpu >= 0) {
                cpu_set_t srv;
                CPU_ZERO(&srv);
                CPU_SET(server_cpu, &srv);
                sched_setaffinity(0, sizeof srv, &srv);
            }
            int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (null < 0 || dup2(capture ? pfd[1] : null, 1) < 0 || dup2(null, 2) < 0)
                _exit(126);
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) != 1)
                _exit(126);
            execvp(cmd[0], cmd);
            _exit(127);
        }
        close(go[0]);
        /* Let the child reach its read() and the scheduler settle. */
        usleep(20000);
        double t0 = now_ms();
        if (write(go[1], "x", 1) != 1) {
            perror("coldstart: release");
            return 1;
        }
        close(go[1]);
        if (capture) {
            close(pfd[1]);
            oc.fd = pfd[0];
            fcntl(oc.fd, F_SETFL, O_NONBLOCK);
        }
        int status = -1;
        long tries = 0;
        double t = 0;
        while (now_ms() - t0 < timeout_ms) {
            tries++;
            status = probe(port, path);
            /* The probe may block in connect() until the server listens:
             * the answer counts from when it arrived, not when it was sent. */
            t = now_ms() - t0;
            if (status == 200)
                break;
            /* A spinning poller slows the server down on a small machine (the
             * vCPUs share a core): pause between refused probes, which
             * keeps the resolution at about 0.1 ms. */
            if (status < 0 && pause_us)
                usleep((useconds_t)pause_us);
            outcap_pump(&oc, 0);
            int ws;
            if (waitpid(pid, &ws, WNOHANG) == pid) {
                if (WIFEXITED(ws) && WEXITSTATUS(ws) == 127)
                    fprintf(stderr, "coldstart: cannot run %s\n", cmd[0]);
                else
                    fprintf(stderr, "coldstart: the server exited before answering\n");
                return 1;
            }
        }
        if (status != 200) {
            fprintf(stderr, "coldstart: no 200 from %s within %d ms (last status %d)\n", path, timeout_ms, status);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return 1;
        }
        double post_ms = -1, get_ms = -1;
        int post_st = -1, get_st = -1;
        if (first_req) {
            post_ms = request(port, "POST", "/api/webhooks",
                              "{\"source\":\"coldstart\",\"eventType\":\"probe\",\"payload\":\"{\\\"n\\\":1}\"}",
                              &post_st);
            get_ms = request(port, "GET", "/api/webhooks", NULL, &get_st);
        }
        double sess_ms = -1, auth1_ms = -1, auth2_ms = -1, exec_auth_ms = -1;
        int sess_st = -1, auth1_st = -1, auth2_st = -1;
        if (api_token) {
            static char resp[65536];
            char hdr[256], tok[128];
            snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", api_token);
            sess_ms = request_h(port, "POST", "/api/sessions", hdr, NULL, &sess_st, resp, sizeof resp);
            const char *body = strstr(resp, "\r\n\r\n");
            if (sess_st == 201 && body && json_field(body, "token", tok, sizeof tok) == 0) {
                snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", tok);
                auth1_ms = request_h(port, "GET", "/api/webhooks?limit=20", hdr, NULL, &auth1_st, resp, sizeof resp);
                exec_auth_ms = auth1_ms < 0 ? -1 : now_ms() - t0;
                auth2_ms = request_h(port, "GET", "/api/webhooks?limit=20", hdr, NULL, &auth2_st, resp, sizeof resp);
            }
        }
        double settle_until = now_ms() + settle_ms;
        outcap_pump(&oc, settle_ms);
        double left = settle_until - now_ms();
        if (left > 0)
            usleep((useconds_t)(left * 1000));
        outcap_pump(&oc, 0);
        long rss = proc_kb(pid, "smaps_rollup", "Rss"), pss = proc_kb(pid, "smaps_rollup", "Pss");
        long uss = proc_kb(pid, "smaps_rollup", "Private_Clean") + proc_kb(pid, "smaps_rollup", "Private_Dirty");
        long hwm = proc_kb(pid, "status", "VmHWM");
        printf("{\"run\":%d,\"status\":%d,\"readyMs\":%.3f,\"polls\":%ld,\"rssKb\":%ld,\"pssKb\":%ld,\"ussKb\":%ld,"
               "\"hwmKb\":%ld",
               run, status, t, tries, rss, pss, uss, hwm);
        if (capture) {
            fputs(",\"startedLine\":", stdout);
            if (oc.have)
                json_str(stdout, oc.line);
            else
                fputs("null", stdout);
            json_num(stdout, "appStartMs", oc.have ? started_ms(oc.line) : -1);
        }
        if (first_req) {
            json_num(stdout, "firstPostMs", post_ms);
            printf(",\"firstPostStatus\":%d", post_st);
            json_num(stdout, "firstGetMs", get_ms);
            printf(",\"firstGetStatus\":%d", get_st);
        }
        if (first_req) {
            /* After the memory figures: the same POST and GET again, STEADY
             * times each on fresh connections as the first ones, for what
             * the first request costs beyond a steady-state one. */
            double sp[STEADY], sg[STEADY];
            int st1 = -1, st2 = -1;
            for (int k = 0; k < STEADY; k++) {
                sp[k] = request(port, "POST", "/api/webhooks",
                                "{\"source\":\"coldstart\",\"eventType\":\"probe\",\"payload\":\"{\\\"n\\\":1}\"}",
                                &st1);
                sg[k] = request(port, "GET", "/api/webhooks", NULL, &st2);
            }
            json_num(stdout, "steadyPostMs", median(sp, STEADY));
            json_num(stdout, "steadyGetMs", median(sg, STEADY));
        }
        if (api_token) {
            json_num(stdout, "sessionMs", sess_ms);
            printf(",\"sessionStatus\":%d", sess_st);
            json_num(stdout, "firstAuthGetMs", auth1_ms);
            printf(",\"firstAuthGetStatus\":%d", auth1_st);
            json_num(stdout, "secondAuthGetMs", auth2_ms);
            printf(",\"secondAuthGetStatus\":%d", auth2_st);
            json_num(stdout, "execToFirstAuthGetMs", exec_auth_ms);
        }
        double tk = now_ms();
        kill(pid, SIGTERM);
        int ws = 0;
        for (int w = 0; w < 5000; w++) {
            outcap_pump(&oc, 0);
            if (waitpid(pid, &ws, WNOHANG) == pid)
                goto reaped;
            usleep(1000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
    reaped:
        printf(",\"stopMs\":%.3f,\"exit\":%d}\n", now_ms() - tk,
               WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
        fflush(stdout);
        if (oc.fd >= 0)
            close(oc.fd);
        for (int w = 0; w < 5000 && probe(port, path) >= 0; w++)
            usleep(1000);
    }
    return 0;
}
