/* SPDX-License-Identifier: MIT
 * The lexical grammar of GraphQL (October 2021 specification, section 2.1)
 * over UTF-8 bytes, one token at a time, as graphql-js 16's lexer reads a
 * document: the same tokens, the same decoded string values, the same
 * error messages and locations. Private to graphql/ (the parser's). */
#ifndef HK_GQ_LEXER_H
#define HK_GQ_LEXER_H

#include <stdarg.h>
#include <stdint.h>

#include "graphql/arena.h"
#include "graphql/ast.h"
#include "graphql/graphql.h"

enum gq_tok {
    GQ_TOK_SOF,
    GQ_TOK_EOF,
    GQ_TOK_BANG,
    GQ_TOK_DOLLAR,
    GQ_TOK_AMP,
    GQ_TOK_PAREN_L,
    GQ_TOK_PAREN_R,
    GQ_TOK_SPREAD,
    GQ_TOK_COLON,
    GQ_TOK_EQUALS,
    GQ_TOK_AT,
    GQ_TOK_BRACKET_L,
    GQ_TOK_BRACKET_R,
    GQ_TOK_BRACE_L,
    GQ_TOK_PIPE,
    GQ_TOK_BRACE_R,
    GQ_TOK_NAME,
    GQ_TOK_INT,
    GQ_TOK_FLOAT,
    GQ_TOK_STRING,
    GQ_TOK_BLOCK_STRING,
};

struct gq_token {
    enum gq_tok kind;
    uint32_t start, end;       /* byte offsets into the document */
    struct gq_loc loc;         /* of `start` */
    /* NAME, INT, FLOAT: the token's text (in the document). STRING: the
     * decoded value, in the document when it has no escape, else in the
     * arena. BLOCK_STRING: the BlockStringValue(), in the arena. Absent
     * (p == NULL) for punctuators, SOF and EOF. */
    struct gq_str value;
};

struct gq_lexer {
    struct gq_arena *a;
    const unsigned char *s;
    uint32_t n;
    uint32_t pos;              /* where the next token's scan begins */
    uint32_t line;             /* of pos */
    uint32_t line_start;       /* byte offset where that line begins */
    /* Columns count UTF-16 code units, not bytes: how many more bytes than
     * code units lie between line_start and pos (counted as the lexer
     * passes characters beyond ASCII, so that a column costs nothing). */
    uint32_t extra;
};

/* Read the document s[0..n) (n < 2^31; borrowed for the lexer's life);
 * decoded strings go to `a`. */
void gq_lex_init(struct gq_lexer *lx, struct gq_arena *a, const char *s, uint32_t n);

/* The next token after the ignored ones (BOM, white space, line
 * terminators, comments, commas); EOF again and again at the end. 0, or -1
 * with graphql-js's syntax error in *err. */
int gq_lex(struct gq_lexer *lx, struct gq_token *t, struct gq_error *err);

/* How graphql-js names a token kind in messages: "Name", "<EOF>", "\"{\""... */
const char *gq_tok_desc(enum gq_tok kind);

/* Fill *err with "Syntax Error: " followed by the formatted message, at
 * byte offset `pos` of s[0..n) (line and column as graphql-js's
 * getLocation counts them). The message goes to the arena; when the arena
 * is full, a fixed message takes its place. Returns -1. */
int gq_syntax_error(struct gq_arena *a, const char *s, uint32_t n, uint32_t pos, struct gq_error *err,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* s[0..n) made fit for a message: NUL bytes and bytes that are not UTF-8
 * become U+FFFD, NUL-terminated, in the arena (NULL when it is full). */
char *gq_printable(struct gq_arena *a, const char *s, size_t n);

#endif
