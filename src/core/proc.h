/* SPDX-License-Identifier: MIT
 * The process's own memory as /proc/self/statm says: one descriptor, opened
 * on first use and kept, so each reading is one pread. */
#ifndef HK_PROC_H
#define HK_PROC_H

#include <stdint.h>

/* Resident and virtual size in bytes; 0 and 0 when /proc cannot be read.
 * Thread-safe. */
void hk_proc_memory(uint64_t *rss, uint64_t *vsize);

#endif
