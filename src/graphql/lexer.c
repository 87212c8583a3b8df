/* SPDX-License-Identifier: MIT
 * GraphQL's lexical grammar over UTF-8 bytes, written to agree with
 * graphql-js 16's lexer token for token and error for error: its
 * lookahead rules for numbers, its escapes (\u{…} and surrogate pairs), its
 * block-string dedent, and its columns in UTF-16 code units. Every loop
 * moves forward through the document; a string is scanned once to check it
 * and once more to decode it into a buffer no longer than its source. */
#include "graphql/lexer.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* What graphql-js's printCodePointAt prints: "<EOF>", "\"a\"", "U+00E9". */
#define CP_TEXT_MAX 16

static const char MSG_NOMEM[] = "Syntax Error: Document needs more memory than allowed. Parsing aborted.";

static const char *const tok_desc[] = {
    [GQ_TOK_SOF] = "<SOF>",
    [GQ_TOK_EOF] = "<EOF>",
    [GQ_TOK_BANG] = "\"!\"",
    [GQ_TOK_DOLLAR] = "\"$\"",
    [GQ_TOK_AMP] = "\"&\"",
    [GQ_TOK_PAREN_L] = "\"(\"",
    [GQ_TOK_PAREN_R] = "\")\"",
    [GQ_TOK_SPREAD] = "\"...\"",
    [GQ_TOK_COLON] = "\":\"",
    [GQ_TOK_EQUALS] = "\"=\"",
    [GQ_TOK_AT] = "\"@\"",
    [GQ_TOK_BRACKET_L] = "\"[\"",
    [GQ_TOK_BRACKET_R] = "\"]\"",
    [GQ_TOK_BRACE_L] = "\"{\"",
    [GQ_TOK_PIPE] = "\"|\"",
    [GQ_TOK_BRACE_R] = "\"}\"",
    [GQ_TOK_NAME] = "Name",
    [GQ_TOK_INT] = "Int",
    [GQ_TOK_FLOAT] = "Float",
    [GQ_TOK_STRING] = "String",
    [GQ_TOK_BLOCK_STRING] = "BlockString",
};

const char *gq_tok_desc(enum gq_tok kind)
{
    return tok_desc[kind];
}

void gq_lex_init(struct gq_lexer *lx, struct gq_arena *a, const char *s, uint32_t n)
{
    memset(lx, 0, sizeof *lx);
    lx->a = a;
    lx->s = (const unsigned char *)s;
    lx->n = n;
    lx->line = 1;
}

/* ---- characters ---------------------------------------------------------- */

/* The byte at i, or -1 past the end (graphql-js reads NaN there, which no
 * test matches). */
static int at(const struct gq_lexer *lx, uint32_t i)
{
    return i < lx->n ? lx->s[i] : -1;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_continue(int c)
{
    return is_name_start(c) || is_digit(c);
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static bool is_scalar(long cp)
{
    return cp >= 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
}

/* The code point that begins at s[i] (i < n) and its length in bytes; -1
 * with length 1 for a byte that does not begin a well-formed sequence.
 * Surrogates written as three bytes (which UTF-8 forbids) decode as
 * themselves, so that they are refused the way graphql-js refuses a lone
 * surrogate in its UTF-16 string. */
static long decode(const unsigned char *s, uint32_t n, uint32_t i, uint32_t *len)
{
    unsigned c = s[i];
    *len = 1;
    if (c < 0x80)
        return c;
    uint32_t k;
    long cp;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        cp = c & 0x0f;
        if (c == 0xe0)
            lo = 0xa0;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        cp = c & 0x07;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return -1;
    }
    if (n - i < k || s[i + 1] < lo || s[i + 1] > hi)
        return -1;
    cp = cp << 6 | (s[i + 1] & 0x3f);
    for (uint32_t j = 2; j < k; j++) {
        if ((s[i + j] & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i + j] & 0x3f);
    }
    *len = k;
    return cp;
}

/* UTF-16 code units a byte adds to a column: a lead byte of four counts
 * two (a surrogate pair), continuation bytes nothing. */
static uint32_t units(unsigned char b)
{
    return (b & 0xc0) == 0x80 ? 0 : b >= 0xf0 ? 2 : 1;
}

/* Bytes of a well-formed character of `len` bytes beyond its code units. */
static uint32_t extra_bytes(uint32_t len)
{
    return len == 4 ? 2 : len - 1;
}

static size_t put_utf8(char *o, long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* graphql-js's printCodePointAt. */
static void cp_text(const struct gq_lexer *lx, uint32_t pos, char out[CP_TEXT_MAX])
{
    if (pos >= lx->n) {
        snprintf(out, CP_TEXT_MAX, "<EOF>");
        return;
    }
    uint32_t len;
    long cp = decode(lx->s, lx->n, pos, &len);
    if (cp < 0)
        cp = 0xfffd;
    if (cp == '"')
        snprintf(out, CP_TEXT_MAX, "'\"'");
    else if (cp >= 0x20 && cp <= 0x7e)
        snprintf(out, CP_TEXT_MAX, "\"%c\"", (int)cp);
    else
        snprintf(out, CP_TEXT_MAX, "U+%04X", (unsigned)(cp & 0x1fffff));
}

/* ---- errors ------------------------------------------------------------- */

/* s[0..n) for a message, at most `max_units` UTF-16 code units of it (as
 * graphql-js's body.slice counts): NUL, bytes that are not UTF-8, encoded
 * surrogates and half a pair cut by the limit all become U+FFFD. */
static char *printable(struct gq_arena *a, const unsigned char *s, size_t n, size_t max_units)
{
    /* Each byte becomes at most three (U+FFFD). */
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = gq_alloc(a, n * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0, taken = 0;
    uint32_t i = 0, n32 = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    while (i < n32 && taken < max_units) {
        uint32_t len;
        long cp = decode(s, n32, i, &len);
        uint32_t u = cp >= 0x10000 ? 2 : 1;
        if (taken + u > max_units || cp <= 0 || !is_scalar(cp)) {
            o += put_utf8(out + o, 0xfffd);
        } else {
            memcpy(out + o, s + i, len);
            o += len;
        }
        taken += u;
        i += len;
    }
    out[o] = 0;
    return out;
}

char *gq_printable(struct gq_arena *a, const char *s, size_t n)
{
    return printable(a, (const unsigned char *)s, n, SIZE_MAX);
}

/* graphql-js's getLocation: lines end at \r\n, \n or \r; the column counts
 * UTF-16 code units from the last line start before `pos`. */
static struct gq_loc location(const unsigned char *s, uint32_t n, uint32_t pos)
{
    uint32_t line = 1, start = 0;
    for (uint32_t i = 0; i < pos && i < n; i++) {
        if (s[i] == '\n' || s[i] == '\r') {
            uint32_t len = s[i] == '\r' && i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
            line++;
            start = i + len;
            i += len - 1;
        }
    }
    uint32_t col = 1;
    /* A position on the \n of a \r\n would be column 0 in graphql-js;
     * only the size limit can point there, and columns start at 1. */
    for (uint32_t i = start; i < pos && i < n; i++)
        col += units(s[i]);
    return (struct gq_loc){line, col};
}

int gq_syntax_error(struct gq_arena *a, const char *s, uint32_t n, uint32_t pos, struct gq_error *err,
                    const char *fmt, ...)
{
    static const char prefix[] = "Syntax Error: ";
    err->nlocs = 1;
    err->locs[0] = location((const unsigned char *)s, n, pos);
    err->message = MSG_NOMEM;
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len >= 0) {
        char *m = gq_alloc(a, sizeof prefix + (size_t)len);
        if (m) {
            memcpy(m, prefix, sizeof prefix - 1);
            vsnprintf(m + sizeof prefix - 1, (size_t)len + 1, fmt, aq);
            err->message = m;
        }
    }
    va_end(aq);
    return -1;
}

#define FAIL(lx, err, pos, ...) \
    gq_syntax_error((lx)->a, (const char *)(lx)->s, (lx)->n, (pos), (err), __VA_ARGS__)

/* "<what>: "<graphql-js's slice of `units` code units at pos>"." */
static int fail_slice(struct gq_lexer *lx, struct gq_error *err, uint32_t pos, uint32_t units, const char *what)
{
    /* No code unit takes more than three bytes. */
    size_t n = lx->n - pos < (size_t)units * 3 ? lx->n - pos : (size_t)units * 3;
    char *text = printable(lx->a, lx->s + pos, n, units);
    if (!text)
        return FAIL(lx, err, pos, "%s.", what);
    return FAIL(lx, err, pos, "%s: \"%s\".", what, text);
}

static int fail_cp(struct gq_lexer *lx, struct gq_error *err, uint32_t pos, const char *what)
{
    char cp[CP_TEXT_MAX];
    cp_text(lx, pos, cp);
    return FAIL(lx, err, pos, "%s: %s.", what, cp);
}

/* ---- tokens ---------------------------------------------------------------- */

/* Where a token starting at `pos` stands; valid before the lexer moves
 * past it. */
static struct gq_loc loc_of(const struct gq_lexer *lx, uint32_t pos)
{
    return (struct gq_loc){lx->line, 1 + (pos - lx->line_start) - lx->extra};
}

static int token(struct gq_lexer *lx, struct gq_token *t, enum gq_tok kind, uint32_t start, uint32_t end)
{
    t->kind = kind;
    t->start = start;
    t->end = end;
    t->value = (struct gq_str){NULL, 0};
    if (kind == GQ_TOK_NAME || kind == GQ_TOK_INT || kind == GQ_TOK_FLOAT)
        t->value = (struct gq_str){(const char *)lx->s + start, end - start};
    lx->pos = end;
    return 0;
}

static int read_digits(struct gq_lexer *lx, uint32_t *pos, struct gq_error *err)
{
    if (!is_digit(at(lx, *pos)))
        return fail_cp(lx, err, *pos, "Invalid number, expected digit but got");
    while (is_digit(at(lx, *pos)))
        ++*pos;
    return 0;
}

/* IntValue and FloatValue, with the lookahead rule: no digit, '.' or
 * NameStart right after a number. */
static int read_number(struct gq_lexer *lx, uint32_t start, struct gq_token *t, struct gq_error *err)
{
    uint32_t pos = start;
    bool is_float = false;
    if (at(lx, pos) == '-')
        pos++;
    if (at(lx, pos) == '0') {
        pos++;
        if (is_digit(at(lx, pos)))
            return fail_cp(lx, err, pos, "Invalid number, unexpected digit after 0");
    } else if (read_digits(lx, &pos, err) < 0) {
        return -1;
    }
    if (at(lx, pos) == '.') {
        is_float = true;
        pos++;
        if (read_digits(lx, &pos, err) < 0)
            return -1;
    }
    if (at(lx, pos) == 'e' || at(lx, pos) == 'E') {
        is_float = true;
        pos++;
        if (at(lx, pos) == '+' || at(lx, pos) == '-')
            pos++;
        if (read_digits(lx, &pos, err) < 0)
            return -1;
    }
    if (at(lx, pos) == '.' || is_name_start(at(lx, pos)))
        return fail_cp(lx, err, pos, "Invalid number, expected digit but got");
    return token(lx, t, is_float ? GQ_TOK_FLOAT : GQ_TOK_INT, start, pos);
}

static long hex4(const struct gq_lexer *lx, uint32_t pos)
{
    long v = 0;
    for (uint32_t i = 0; i < 4; i++) {
        int d = hex_value(at(lx, pos + i));
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* The escape sequence at s[pos] (a backslash): 0 with its code point and
 * length in bytes, or -1 with graphql-js's message and how many code units
 * of the source it quotes. */
static int escape(const struct gq_lexer *lx, uint32_t pos, long *cp, uint32_t *size, const char **what)
{
    int c = at(lx, pos + 1);
    if (c == 'u' && at(lx, pos + 2) == '{') {
        /* \u{…}: at most 8 hex digits, as graphql-js reads them into a
         * 32-bit integer that must stay positive. */
        uint32_t point = 0, n = 3;
        *what = "Invalid Unicode escape sequence";
        while (n < 12) {
            int d = at(lx, pos + n++);
            if (d == '}') {
                if (n < 5 || !is_scalar(point))
                    break;
                *cp = point;
                *size = n;
                return 0;
            }
            d = hex_value(d);
            if (d < 0)
                break;
            point = point << 4 | (uint32_t)d;
            if (point & 0x80000000u)
                break;
        }
        *size = n;
        return -1;
    }
    if (c == 'u') {
        long code = hex4(lx, pos + 2);
        *what = "Invalid Unicode escape sequence";
        *size = 6;
        if (is_scalar(code)) {
            *cp = code;
            return 0;
        }
        /* JSON's surrogate pairs are allowed, only as a whole pair. */
        if (code >= 0xd800 && code <= 0xdbff && at(lx, pos + 6) == '\\' && at(lx, pos + 7) == 'u') {
            long trail = hex4(lx, pos + 8);
            if (trail >= 0xdc00 && trail <= 0xdfff) {
                *cp = 0x10000 + ((code - 0xd800) << 10) + (trail - 0xdc00);
                *size = 12;
                return 0;
            }
        }
        return -1;
    }
    *size = 2;
    switch (c) {
    case '"': *cp = '"'; return 0;
    case '\\': *cp = '\\'; return 0;
    case '/': *cp = '/'; return 0;
    case 'b': *cp = '\b'; return 0;
    case 'f': *cp = '\f'; return 0;
    case 'n': *cp = '\n'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 't': *cp = '\t'; return 0;
    }
    *what = "Invalid character escape sequence";
    return -1;
}

/* "…": first checked (every error graphql-js would raise, in its order),
 * then decoded; without escapes the value is the source text itself. */
static int read_string(struct gq_lexer *lx, uint32_t start, struct gq_token *t, struct gq_error *err)
{
    uint32_t pos = start + 1;
    bool escaped = false;
    for (;;) {
        if (pos >= lx->n)
            return FAIL(lx, err, pos, "Unterminated string.");
        unsigned c = lx->s[pos];
        if (c == '"')
            break;
        if (c == '\\') {
            long cp;
            uint32_t size;
            const char *what;
            if (escape(lx, pos, &cp, &size, &what) < 0)
                return fail_slice(lx, err, pos, size, what);
            escaped = true;
            pos += size;
            continue;
        }
        if (c == '\n' || c == '\r')
            return FAIL(lx, err, pos, "Unterminated string.");
        uint32_t len = 1;
        if (c >= 0x80) {
            if (!is_scalar(decode(lx->s, lx->n, pos, &len)))
                return fail_cp(lx, err, pos, "Invalid character within String");
            lx->extra += extra_bytes(len);
        }
        pos += len;
    }
    uint32_t end = pos + 1;
    token(lx, t, GQ_TOK_STRING, start, end);
    if (!escaped) {
        t->value = (struct gq_str){(const char *)lx->s + start + 1, end - start - 2};
        return 0;
    }
    /* Every escape is longer than the UTF-8 it stands for. */
    char *out = gq_alloc(lx->a, end - start);
    if (!out)
        return FAIL(lx, err, start, "Document needs more memory than allowed. Parsing aborted.");
    size_t o = 0;
    for (uint32_t i = start + 1; i < end - 1;) {
        if (lx->s[i] == '\\') {
            long cp = 0;
            uint32_t size = 2;
            const char *what;
            (void)escape(lx, i, &cp, &size, &what);
            o += put_utf8(out + o, cp);
            i += size;
        } else {
            out[o++] = (char)lx->s[i++];
        }
    }
    t->value = (struct gq_str){out, (uint32_t)o};
    return 0;
}

/* One raw line of a block string's content [*pos, end): its bytes up to
 * the line terminator; *pos moves past the terminator. False for the
 * last line (no terminator after it). */
static bool block_line(const unsigned char *s, uint32_t end, uint32_t *pos, uint32_t *ls, uint32_t *le)
{
    uint32_t i = *pos;
    *ls = i;
    while (i < end && s[i] != '\n' && s[i] != '\r')
        i++;
    *le = i;
    if (i == end) {
        *pos = i;
        return false;
    }
    i += s[i] == '\r' && i + 1 < end && s[i + 1] == '\n' ? 2 : 1;
    *pos = i;
    return true;
}

static uint32_t leading_ws(const unsigned char *s, uint32_t ls, uint32_t le)
{
    uint32_t i = ls;
    while (i < le && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i - ls;
}

/* """…""": checked, then the spec's BlockStringValue(): the common
 * indentation of every line but the first removed, blank lines removed
 * at both ends, lines joined with \n, \""" read as """. */
static int read_block_string(struct gq_lexer *lx, uint32_t start, struct gq_token *t, struct gq_error *err)
{
    const unsigned char *s = lx->s;
    uint32_t pos = start + 3, lines = 0, last_start = 0;
    for (;;) {
        if (pos >= lx->n)
            return FAIL(lx, err, pos, "Unterminated string.");
        unsigned c = s[pos];
        if (c == '"' && at(lx, pos + 1) == '"' && at(lx, pos + 2) == '"')
            break;
        if (c == '\\' && at(lx, pos + 1) == '"' && at(lx, pos + 2) == '"' && at(lx, pos + 3) == '"') {
            pos += 4;
            continue;
        }
        if (c == '\n' || c == '\r') {
            pos += c == '\r' && at(lx, pos + 1) == '\n' ? 2 : 1;
            lines++;
            last_start = pos;
            lx->extra = 0;
            continue;
        }
        uint32_t len = 1;
        if (c >= 0x80) {
            if (!is_scalar(decode(s, lx->n, pos, &len)))
                return fail_cp(lx, err, pos, "Invalid character within String");
            lx->extra += extra_bytes(len);
        }
        pos += len;
    }
    uint32_t cs = start + 3, ce = pos;
    token(lx, t, GQ_TOK_BLOCK_STRING, start, pos + 3);
    if (lines) {
        lx->line += lines;
        lx->line_start = last_start;
    }

    /* First pass: the common indentation and the non-blank range. */
    uint32_t common = UINT32_MAX, first = UINT32_MAX, last = 0, i = 0, p = cs, ls, le;
    bool more = true;
    for (i = 0; more; i++) {
        more = block_line(s, ce, &p, &ls, &le);
        uint32_t ws = leading_ws(s, ls, le);
        if (ws == le - ls)
            continue;
        if (first == UINT32_MAX)
            first = i;
        last = i;
        if (i != 0 && ws < common)
            common = ws;
    }
    char *out = gq_alloc(lx->a, ce - cs + 1);
    if (!out)
        return FAIL(lx, err, start, "Document needs more memory than allowed. Parsing aborted.");
    size_t o = 0;
    p = cs;
    more = true;
    for (i = 0; more && first != UINT32_MAX && i <= last; i++) {
        more = block_line(s, ce, &p, &ls, &le);
        if (i < first)
            continue;
        if (i > first)
            out[o++] = '\n';
        if (i != 0)
            ls += le - ls < common ? le - ls : common;
        for (uint32_t j = ls; j < le;) {
            if (s[j] == '\\' && j + 3 < le && s[j + 1] == '"' && s[j + 2] == '"' && s[j + 3] == '"') {
                j++;
                continue;
            }
            out[o++] = (char)s[j++];
        }
    }
    out[o] = 0;
    t->value = (struct gq_str){out, (uint32_t)o};
    return 0;
}

int gq_lex(struct gq_lexer *lx, struct gq_token *t, struct gq_error *err)
{
    const unsigned char *s = lx->s;
    uint32_t n = lx->n, pos = lx->pos;
    while (pos < n) {
        unsigned c = s[pos];
        enum gq_tok kind;
        t->loc = loc_of(lx, pos);
        switch (c) {
        case '\t':
        case ' ':
        case ',':
            pos++;
            continue;
        case '\n':
        case '\r':
            pos += c == '\r' && at(lx, pos + 1) == '\n' ? 2 : 1;
            lx->line++;
            lx->line_start = pos;
            lx->extra = 0;
            continue;
        case 0xef:
            if (at(lx, pos + 1) == 0xbb && at(lx, pos + 2) == 0xbf) {
                pos += 3;          /* U+FEFF, the byte order mark */
                lx->extra += 2;
                continue;
            }
            goto other;
        case '#':
            /* A comment runs to the line's end, or to a character that is
             * not a Unicode scalar value, which is then refused below. */
            pos++;
            while (pos < n && s[pos] != '\n' && s[pos] != '\r') {
                uint32_t len = 1;
                if (s[pos] >= 0x80) {
                    if (!is_scalar(decode(s, n, pos, &len)))
                        break;
                    lx->extra += extra_bytes(len);
                }
                pos += len;
            }
            continue;
        case '!': kind = GQ_TOK_BANG; break;
        case '$': kind = GQ_TOK_DOLLAR; break;
        case '&': kind = GQ_TOK_AMP; break;
        case '(': kind = GQ_TOK_PAREN_L; break;
        case ')': kind = GQ_TOK_PAREN_R; break;
        case ':': kind = GQ_TOK_COLON; break;
        case '=': kind = GQ_TOK_EQUALS; break;
        case '@': kind = GQ_TOK_AT; break;
        case '[': kind = GQ_TOK_BRACKET_L; break;
        case ']': kind = GQ_TOK_BRACKET_R; break;
        case '{': kind = GQ_TOK_BRACE_L; break;
        case '|': kind = GQ_TOK_PIPE; break;
        case '}': kind = GQ_TOK_BRACE_R; break;
        case '.':
            if (at(lx, pos + 1) == '.' && at(lx, pos + 2) == '.')
                return token(lx, t, GQ_TOK_SPREAD, pos, pos + 3);
            goto other;
        case '"':
            if (at(lx, pos + 1) == '"' && at(lx, pos + 2) == '"')
                return read_block_string(lx, pos, t, err);
            return read_string(lx, pos, t, err);
        default:
            goto other;
        }
        return token(lx, t, kind, pos, pos + 1);
    other:
        if (is_digit((int)c) || c == '-')
            return read_number(lx, pos, t, err);
        if (is_name_start((int)c)) {
            uint32_t end = pos + 1;
            while (end < n && is_name_continue(s[end]))
                end++;
            return token(lx, t, GQ_TOK_NAME, pos, end);
        }
        lx->pos = pos;
        if (c == '\'')
            return FAIL(lx, err, pos,
                        "Unexpected single quote character ('), did you mean to use a double quote (\")?");
        uint32_t len;
        if (is_scalar(decode(s, n, pos, &len)))
            return fail_cp(lx, err, pos, "Unexpected character");
        return fail_cp(lx, err, pos, "Invalid character");
    }
    t->loc = loc_of(lx, n);
    return token(lx, t, GQ_TOK_EOF, n, n);
}
