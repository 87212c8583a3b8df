/* SPDX-License-Identifier: MIT
 * /proc/self/statm through one cached descriptor (see proc.h). */
#include "core/proc.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int statm_fd = -1;
static long page_size;

static void open_statm(void)
{
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    page_size = sysconf(_SC_PAGESIZE);
}

void hk_proc_memory(uint64_t *rss, uint64_t *vsize)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, open_statm);
    *rss = *vsize = 0;
    char buf[128];
    ssize_t n = statm_fd >= 0 ? pread(statm_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return;
    buf[n] = 0;
    unsigned long size, resident;
    if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
        return;
    *rss = (uint64_t)resident * (uint64_t)page_size;
    *vsize = (uint64_t)size * (uint64_t)page_size;
}
