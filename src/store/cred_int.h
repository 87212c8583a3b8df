/* SPDX-License-Identifier: MIT
 * What both stores check of a credential op before it goes anywhere near
 * the database (store.h: the rules for names, scopes and times), so that
 * the two answer the same HK_EINVAL for the same input, and PostgreSQL
 * never sees a statement it would refuse in a group other ops share. Not
 * for use outside src/store/. */
#ifndef HK_STORE_CRED_INT_H
#define HK_STORE_CRED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/credential.h"
#include "store/store.h"

/* 1 to HK_TOKEN_NAME_MAX bytes of [A-Za-z0-9._-], NUL-terminated within
 * HK_TOKEN_NAME_MAX + 1 bytes (a record's name array, or a string). */
static inline bool hk__cred_name_ok(const char *p)
{
    if (!p)
        return false;
    size_t n = 0;
    for (; n <= HK_TOKEN_NAME_MAX && p[n] != '\0'; n++) {
        char ch = p[n];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return n >= 1 && n <= HK_TOKEN_NAME_MAX;
}

static inline bool hk__cred_scopes_ok(unsigned scopes)
{
    return scopes != 0 && (scopes & ~(unsigned)HK_SCOPE_ALL) == 0;
}

static inline bool hk__cred_time_ok(int64_t us)
{
    return us >= 0 && us <= HK_STORE_TIME_MAX;
}

static inline bool hk__cred_kind(enum hk_op_kind k)
{
    return k >= HK_OP_TOKEN_PUT && k <= HK_OP_SESSION_DEL;
}

/* A credential op's input as store.h promises to take it: 0, or HK_EINVAL. */
static inline int hk__cred_check(const struct hk_store_op *op)
{
    const struct hk_token_rec *t = op->token;
    const struct hk_session_rec *s = op->session;
    switch (op->kind) {
    case HK_OP_TOKEN_PUT:
        return t && hk__cred_name_ok(t->name) && hk__cred_scopes_ok(t->scopes) &&
               hk__cred_time_ok(t->created_us) && hk__cred_time_ok(t->expires_us)
                   ? 0 : HK_EINVAL;
    case HK_OP_TOKEN_GET:
        return t ? 0 : HK_EINVAL;
    case HK_OP_TOKEN_LIST:
        return 0;
    case HK_OP_TOKEN_REVOKE:
        return hk__cred_name_ok(op->name) ? 0 : HK_EINVAL;
    case HK_OP_SESSION_PUT:
        return s && hk__cred_name_ok(s->subject) && hk__cred_scopes_ok(s->scopes) &&
               s->expires_us > 0 && hk__cred_time_ok(s->expires_us)
                   ? 0 : HK_EINVAL;
    case HK_OP_SESSION_GET:
    case HK_OP_SESSION_DEL:
        return s ? 0 : HK_EINVAL;
    default:
        return HK_EINVAL;
    }
}

/* Prepare a credential op at submit: check it, take the time, and give a
 * new token its creation time and a live state. 0, or HK_EINVAL. */
static inline int hk__cred_begin(struct hk_store_op *op, int64_t now_us)
{
    int rc = hk__cred_check(op);
    if (rc < 0)
        return rc;
    op->now_us = now_us;
    if (op->kind == HK_OP_TOKEN_PUT) {
        if (op->token->created_us == 0)
            op->token->created_us = now_us;
        op->token->revoked_us = 0;
    }
    return 0;
}

#endif
