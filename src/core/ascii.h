/* SPDX-License-Identifier: MIT
 * Byte-level text checks shared by every layer: printable ASCII and hex
 * digits (header values, ids, signatures, percent escapes, hashes). */
#ifndef HK_ASCII_H
#define HK_ASCII_H

#include <stdbool.h>
#include <stddef.h>

/* True when all n bytes are printable ASCII: from `lo` (0x20 to allow
 * spaces, 0x21 to refuse them) up to 0x7e. An empty run is printable. */
static inline bool hk_ascii_printable(const char *p, size_t n, unsigned char lo)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < lo || (unsigned char)p[i] > 0x7e)
            return false;
    return true;
}

/* The value of a hex digit (either case), or -1. */
static inline int hk_hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode 2 * n hex digits into n bytes. Returns 0, or -1 on a non-digit. */
static inline int hk_hex_decode(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int h = hk_hex_val(hex[2 * i]), l = hk_hex_val(hex[2 * i + 1]);
        if (h < 0 || l < 0)
            return -1;
        out[i] = (unsigned char)(h << 4 | l);
    }
    return 0;
}

/* n bytes as 2 * n lowercase hex digits, then a NUL: out holds 2 * n + 1. */
static inline void hk_hex_encode(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

#endif
