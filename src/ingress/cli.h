/* SPDX-License-Identifier: MIT
 * `hookd sign` and `hookd verify`: a source's scheme from the command line,
 * to make a test delivery or to find out why a provider's was refused. */
#ifndef HK_INGRESS_CLI_H
#define HK_INGRESS_CLI_H

#include <stdio.h>

/* argv[0] is "sign" or "verify"; `sources_path` is HOOKD_SOURCES (NULL:
 * an error). Reads the body from stdin, writes the result to stdout and
 * usage errors to stderr. Returns the exit code: 0 done (verify: the
 * signature verifies), 1 verify: it does not, 2 usage or setup error. */
int hk_ingress_cli(int argc, char **argv, const char *sources_path);

/* The same on the streams given (the tests). Reads secrets through
 * core/config.h's hk_env. */
int hk_ingress_cli_io(int argc, char **argv, const char *sources_path, FILE *in, FILE *out, FILE *err);

#endif
