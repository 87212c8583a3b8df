/* SPDX-License-Identifier: MIT
 * Ingress state shared by the whole process (api/hooks.c), and what
 * /q/metrics reads of it (api/metrics.c). Private to api/. */
#ifndef HK_API_INGRESS_H
#define HK_API_INGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ingress/provider.h"
#include "ingress/sources.h"

/* Why a delivery was refused: the `reason` of its problem document and
 * the label of hookd_ingress_rejected_total. Append only. */
enum {
    HK_IR_MISSING_HEADER,
    HK_IR_MALFORMED_HEADER,
    HK_IR_TIMESTAMP,
    HK_IR_NO_MATCH,
    HK_IR_NO_SECRET,
    HK_IR_UNKNOWN_SOURCE,
    HK_IR_BODY_TOO_LARGE,
    HK_IR_MEDIA_TYPE,
    HK_IR_RATE_LIMITED,
    HK_IR_BUSY,
    HK_IR_STORE,
    HK_IR_HANDSHAKE,
    HK_IR__COUNT
};

/* What became of a delivery: hookd_ingress_total{result}. */
enum hk_ingress_result { HK_IRES_STORED, HK_IRES_DUPLICATE, HK_IRES_HANDSHAKE, HK_IRES_REJECTED, HK_IRES__COUNT };

const char *hk_ingress_reason_name(int i);
const char *hk_ingress_result_name(int i);

/* Counters and the rate bucket of one source name. Names stay for the
 * process's life (a reload that drops a source keeps its counts). */
struct hk_ingress_slot {
    char name[HK_SOURCE_NAME_MAX + 1];
    double tokens;             /* the bucket, under hk_ingress.mu */
    uint64_t last_ns;
    bool bucket_init;
    _Atomic uint64_t result[HK_IRES__COUNT];
    _Atomic uint64_t reason[HK_IR__COUNT];
};

#define HK_INGRESS_SLOTS 2048

struct hk_ingress {
    /* Guards `sources` (swap, and taking a reference), slot inserts and
     * the buckets. Held for a lookup, never across I/O. */
    pthread_mutex_t mu;
    struct hk_sources *sources;        /* the current snapshot; NULL: no sources file */
    struct hk_ingress_slot slots[HK_INGRESS_SLOTS];
    unsigned nslots;                   /* slot 0: names no source has */
    _Atomic uint64_t inflight;         /* body bytes held by requests being received or stored */
    _Atomic uint64_t handshakes[HK_HS__COUNT];
    _Atomic uint64_t reloads, reload_failures;
};

/* Make `s` (a new reference, given to the call) the current snapshot;
 * requests holding the old one keep it until they end. */
int hk_ingress_install(struct hk_ingress *g, struct hk_sources *s);
/* A new reference to the current snapshot (hk_sources_unref when done), or
 * NULL when there is none (no HOOKD_SOURCES, or g NULL). */
struct hk_sources *hk_ingress_snapshot(struct hk_ingress *g);

#endif
