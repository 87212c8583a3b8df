/* SPDX-License-Identifier: MIT
 * hk_utf8_valid against hand-picked edge cases and, exhaustively for every
 * sequence of up to three bytes, against a decoder written the other way
 * round (decode the code point, then judge it). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/utf8.h"

struct u8case {
    const char *s;
    size_t n;
    bool ok;
};

#define C(lit, ok) {lit, sizeof lit - 1, ok}

static const struct u8case cases[] = {
    C("", true),
    C("plain ascii", true),
    C("caf\xc3\xa9", true),                 /* U+00E9 */
    C("\xe2\x82\xac", true),                /* U+20AC */
    C("\xf0\x9f\x98\x80", true),            /* U+1F600 */
    C("\xf4\x8f\xbf\xbf", true),            /* U+10FFFF, the last */
    C("\xef\xbf\xbd", true),                /* U+FFFD */
    C("\xff\xfe", false),                   /* never in UTF-8 */
    C("\xc0\xaf", false),                   /* overlong '/' */
    C("\xc1\xbf", false),                   /* overlong */
    C("\xe0\x80\xaf", false),               /* overlong, 3 bytes */
    C("\xf0\x80\x80\xaf", false),           /* overlong, 4 bytes */
    C("\xed\xa0\x80", false),               /* U+D800, a surrogate */
    C("\xed\xbf\xbf", false),               /* U+DFFF */
    C("\xf4\x90\x80\x80", false),           /* U+110000 */
    C("\xf5\x80\x80\x80", false),
    C("\x80", false),                       /* lone continuation */
    C("\xc3", false),                       /* truncated */
    C("\xe2\x82", false),
    C("\xf0\x9f\x98", false),
    C("\xc3\x28", false),                   /* bad continuation */
    C("a\xe2\x28\xa1", false),
};

Test(utf8, edge_cases)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(hk_utf8_valid(cases[i].s, cases[i].n, false), cases[i].ok, "case %zu", i);
}

Test(utf8, nul_only_when_allowed)
{
    cr_expect_not(hk_utf8_valid("a\0b", 3, false));
    cr_expect(hk_utf8_valid("a\0b", 3, true));
    cr_expect_not(hk_utf8_valid("\0", 1, false));
}

/* The reference: decode greedily by the lead byte's length, then reject
 * overlongs, surrogates and what lies above U+10FFFF. */
static bool reference(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], len, cp;
        if (c < 0x80) {
            if (c == 0)
                return false;
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            len = 2, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            len = 3, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            len = 4, cp = c & 0x07;
        else
            return false;
        if (n - i < len)
            return false;
        for (unsigned k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
        i += len;
    }
    return true;
}

Test(utf8, every_sequence_up_to_three_bytes)
{
    unsigned char b[3];
    for (unsigned x = 0; x < 256; x++) {
        b[0] = (unsigned char)x;
        cr_assert_eq(hk_utf8_valid((char *)b, 1, false), reference(b, 1), "%02x", x);
        for (unsigned y = 0; y < 256; y++) {
            b[1] = (unsigned char)y;
            cr_assert_eq(hk_utf8_valid((char *)b, 2, false), reference(b, 2), "%02x %02x", x, y);
            for (unsigned z = 0; z < 256; z++) {
                b[2] = (unsigned char)z;
                if (hk_utf8_valid((char *)b, 3, false) != reference(b, 3))
                    cr_assert_fail("%02x %02x %02x", x, y, z);
            }
        }
    }
}

Test(utf8, four_byte_boundaries)
{
    /* Every lead byte with every second byte, the rest fixed valid. */
    unsigned char b[4] = {0, 0, 0x80, 0xbf};
    for (unsigned x = 0xf0; x < 0x100; x++)
        for (unsigned y = 0; y < 256; y++) {
            b[0] = (unsigned char)x;
            b[1] = (unsigned char)y;
            cr_assert_eq(hk_utf8_valid((char *)b, 4, false), reference(b, 4), "%02x %02x", x, y);
        }
}
