/* SPDX-License-Identifier: MIT
 * coldstart: exec a server and poll it with a tight loopback client until
 * GET <path> answers 200; print the time from just before fork to that
 * answer, with the server's RSS/PSS/USS a moment later, as one JSON line.
 *
 *   coldstart [-p port] [-u /q/health/ready] [-s settle_ms] [-n runs] [-i pause_us] [-c server_cpu] -- cmd args...
 *
 * Each run starts the command afresh (SIGTERM, then SIGKILL after 5 s).
 * Between refused probes the poller pauses pause_us (default 100 us). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One GET; returns the status code, or -1 when the server is not there yet. */
static int probe(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int status = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        goto out;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n)
        goto out;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    if (r >= 12) {
        buf[r] = 0;
        if (strncmp(buf, "HTTP/1.", 7) == 0)
            status = atoi(buf + 9);
    }
out:
    close(fd);
    return status;
}

/* Sum a field of /proc/PID/smaps_rollup (kB). */
static long rollup(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
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

int main(int argc, char **argv)
{
    int port = 8080, runs = 1, settle_ms = 1000, pause_us = 100, server_cpu = -1;
    const char *path = "/q/health/ready";
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
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
    }
    if (i >= argc - 1) {
        fprintf(stderr, "usage: coldstart [-p port] [-u path] [-n runs] [-s settle_ms] [-i pause_us] [-c server_cpu] -- cmd args...\n");
        return 2;
    }
    char **cmd = argv + i + 1;
    if (probe(port, path) >= 0) {
        fprintf(stderr, "coldstart: something already answers on port %d\n", port);
        return 1;
    }
    for (int run = 0; run < runs; run++) {
        double t0 = now_ms();
        /* posix_spawn (vfork semantics): the launcher's own fork cost stays
         * out of the figure. */
        pid_t pid;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        /* The child inherits the affinity in force at spawn: pin it without
         * the extra exec that taskset would add to the figure. */
        cpu_set_t mine, srv;
        sched_getaffinity(0, sizeof mine, &mine);
        if (server_cpu >= 0) {
            CPU_ZERO(&srv);
            CPU_SET(server_cpu, &srv);
            sched_setaffinity(0, sizeof srv, &srv);
        }
        int se = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ);
        if (server_cpu >= 0)
            sched_setaffinity(0, sizeof mine, &mine);
        posix_spawn_file_actions_destroy(&fa);
        if (se != 0) {
            fprintf(stderr, "coldstart: cannot start %s: %s\n", cmd[0], strerror(se));
            return 1;
        }
        int status = -1;
        long tries = 0;
        double t = 0;
        while (now_ms() - t0 < 30000) {
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
            int ws;
            if (waitpid(pid, &ws, WNOHANG) == pid) {
                fprintf(stderr, "coldstart: the server exited before answering\n");
                return 1;
            }
        }
        usleep((useconds_t)settle_ms * 1000);
        long rss = rollup(pid, "Rss"), pss = rollup(pid, "Pss");
        long uss = rollup(pid, "Private_Clean") + rollup(pid, "Private_Dirty");
        printf("{\"run\":%d,\"status\":%d,\"readyMs\":%.3f,\"polls\":%ld,\"rssKb\":%ld,\"pssKb\":%ld,\"ussKb\":%ld}\n",
               run, status, t, tries, rss, pss, uss);
        fflush(stdout);
        kill(pid, SIGTERM);
        for (int w = 0; w < 500; w++) {
            if (waitpid(pid, NULL, WNOHANG) == pid)
                goto reaped;
            usleep(10000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    reaped:
        while (probe(port, path) >= 0)
            usleep(1000);
    }
    return 0;
}
