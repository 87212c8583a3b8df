/* SPDX-License-Identifier: MIT
 * Unit tests for the parts of the PostgreSQL store that need no server: the
 * password redaction of connection strings and the scrubbing of libpq
 * messages (store/pg_redact.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "store/pg.h"

TestSuite(pg_redact);

struct redact_case {
    const char *url;
    const char *want;
};

static const struct redact_case redact_cases[] = {
    /* URIs, both schemes */
    {"postgresql://u:secret@db.example:5432/hookd", "postgresql://u:***@db.example:5432/hookd"},
    {"postgres://u:secret@db/hookd?sslmode=require", "postgres://u:***@db/hookd?sslmode=require"},
    {"postgresql://u@db/hookd", "postgresql://u@db/hookd"},
    {"postgresql://db/hookd", "postgresql://db/hookd"},
    {"postgresql://", "postgresql://"},
    {"postgresql://u:@db/x", "postgresql://u:***@db/x"},
    /* percent-encoded and raw specials in the password */
    {"postgresql://u:p%40ss%2Fw@db/x", "postgresql://u:***@db/x"},
    {"postgresql://u:p@ss@db/x", "postgresql://u:***@db/x"},
    {"postgresql://u:a:b@h1:5432,h2:5433/x", "postgresql://u:***@h1:5432,h2:5433/x"},
    /* ?password= in the query, plain or encoded key */
    {"postgresql://u@db/x?password=secret&sslmode=disable",
     "postgresql://u@db/x?password=***&sslmode=disable"},
    {"postgresql://u@db/x?sslmode=disable&password=secret", "postgresql://u@db/x?sslmode=disable&password=***"},
    {"postgresql://u@db/x?pass%77ord=secret", "postgresql://u@db/x?pass%77ord=***"},
    {"postgresql://u:one@db/x?password=two", "postgresql://u:***@db/x?password=***"},
    /* key=value strings */
    {"host=db user=u password=secret dbname=x", "host=db user=u password=*** dbname=x"},
    {"host=db password = secret dbname=x", "host=db password = *** dbname=x"},
    {"host=db password='sec ret' dbname=x", "host=db password=*** dbname=x"},
    {"host=db password='it\\'s' dbname=x", "host=db password=*** dbname=x"},
    {"password=a\\ b host=db", "password=*** host=db"},
    {"host=db dbname=x", "host=db dbname=x"},
    {"", ""},
    /* unparsable: everything from the bad token on is hidden */
    {"host=db secretwithoutkey", "host=db ***"},
    {"host=db passwd", "host=db ***"},
};

Test(pg_redact, cases)
{
    /* A plain loop rather than a parameterized test: Criterion runs each
     * case in a new process, where pointers to these strings would dangle. */
    for (size_t i = 0; i < sizeof redact_cases / sizeof redact_cases[0]; i++) {
        const struct redact_case *c = &redact_cases[i];
        char out[256];
        hk_pg_redact(c->url, out, sizeof out);
        cr_expect_str_eq(out, c->want, "redact(\"%s\")", c->url);
    }
}

Test(pg_redact, truncates_and_terminates)
{
    char out[12];
    memset(out, 'x', sizeof out);
    hk_pg_redact("postgresql://u:secret@db/x", out, sizeof out);
    cr_assert_eq(strlen(out), sizeof out - 1);
    cr_assert_str_eq(out, "postgresql:");
    hk_pg_redact(NULL, out, sizeof out);
    cr_assert_str_eq(out, "");
}

Test(pg_redact, never_contains_the_password)
{
    /* Whatever the form, the secret itself is gone. */
    const char *urls[] = {
        "postgresql://user:Sup3rS3cret@h/db",
        "postgres://user:Sup3rS3cret@h:1,h2:2/db?x=1",
        "postgresql://user@h/db?password=Sup3rS3cret",
        "host=h password=Sup3rS3cret",
        "host=h password='Sup3rS3cret'",
        "host=h   password   =   Sup3rS3cret   user=u",
        "Sup3rS3cret",
        "host=h Sup3rS3cret",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char out[256];
        hk_pg_redact(urls[i], out, sizeof out);
        cr_assert_null(strstr(out, "Sup3rS3cret"), "\"%s\" -> \"%s\"", urls[i], out);
    }
}

TestSuite(pg_scrub);

Test(pg_scrub, one_line_without_the_password)
{
    char out[256];
    hk_pg_scrub("postgresql://u:hunter2@db/x",
                "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL:  "
                "password authentication failed for user \"u\" hunter2\n\tsecond line\n",
                out, sizeof out);
    cr_assert_str_eq(out, "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL: "
                          "password authentication failed for user \"u\" *** second line");
}

Test(pg_scrub, decoded_and_quoted_forms)
{
    char out[256];
    hk_pg_scrub("postgresql://u:p%40ss@db/x", "invalid token \"p%40ss\" or p@ss", out, sizeof out);
    cr_assert_str_eq(out, "invalid token \"***\" or ***");
    hk_pg_scrub("host=db password='it\\'s here'", "saw it's here and 'it\\'s here'", out, sizeof out);
    cr_assert_null(strstr(out, "it's here"), "%s", out);
    cr_assert_null(strstr(out, "it\\'s here"), "%s", out);
    hk_pg_scrub("postgresql://u@db/x?password=abc%21", "abc! and abc%21", out, sizeof out);
    cr_assert_str_eq(out, "*** and ***");
}

Test(pg_scrub, no_password_leaves_the_message)
{
    char out[64];
    hk_pg_scrub("postgresql://u@db/x", "  could not connect\n", out, sizeof out);
    cr_assert_str_eq(out, "could not connect");
    hk_pg_scrub(NULL, NULL, out, sizeof out);
    cr_assert_str_eq(out, "");
}
