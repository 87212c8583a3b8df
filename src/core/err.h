/* SPDX-License-Identifier: MIT
 * Error codes shared by every module: 0 is success, negatives are errors.
 * libuv's UV_E* codes pass through unchanged; hookd's own live below -10000. */
#ifndef HK_ERR_H
#define HK_ERR_H

enum {
    HK_OK = 0,
    HK_ENOTFOUND = -10001,   /* no such row */
    HK_EBUSY = -10002,       /* queue full: answer 503 + Retry-After */
    HK_EUNAVAIL = -10003,    /* store unusable right now: 503 */
    HK_ETIMEDOUT = -10004,   /* store query timed out: 503 */
    HK_EINVAL = -10005,      /* bad argument */
    HK_ECONFLICT = -10006,   /* idempotency key reused with a different body: 409 */
    HK_ESTORE = -10007,      /* store failed in an unexpected way: 500 */
    HK_EFULL = -10008,       /* the store's disk is full: 507 + Retry-After */
    HK_ELOCKED = -10009,     /* the database is locked by someone else: 503 + Retry-After */
    HK_EIO = -10010,         /* the store's disk failed an I/O: 503 + Retry-After */
};

#endif
