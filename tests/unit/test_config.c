/* SPDX-License-Identifier: MIT
 * Configuration: defaults, environment, flags, and one-line errors naming
 * the variable. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"

static void clean_env(void)
{
    const char *vars[] = {"PORT", "HOOKD_HOST", "HOOKD_THREADS", "HOOKD_SQLITE_PATH", "HOOKD_MAX_BODY_BYTES",
                          "HOOKD_HEADER_TIMEOUT", "DATABASE_URL", "HOOKD_SQLITE_SYNC", "HOOKD_LOG_LEVEL",
                          "HOOKD_WEBHOOK_SECRET", "HOOKD_WEBHOOK_SECRET_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

TestSuite(config, .init = clean_env);

Test(config, defaults)
{
    struct hk_config c;
    char err[256] = "";
    char *argv[] = {"hookd", NULL};
    cr_assert_eq(hk_config_load(&c, 1, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_expect_eq(c.port, 8080);
    cr_expect_str_eq(c.host, "0.0.0.0");
    cr_expect_str_eq(c.sqlite_path, "./hookd.db");
    cr_expect_eq(c.max_body_bytes, 1048576u);
    cr_expect_eq(c.header_timeout_ms, 10000u);
    cr_expect(c.sqlite_sync_full);
    cr_expect_null(c.database_url);
    cr_expect_geq(c.threads, 1);
    cr_expect_eq(c.threads, hk_cpus_available());
    hk_config_free(&c);
}

Test(config, env_then_flags_win)
{
    setenv("PORT", "9000", 1);
    setenv("HOOKD_HEADER_TIMEOUT", "250ms", 1);
    struct hk_config c;
    char err[256] = "";
    char *argv[] = {"hookd", "--port", "9001", "--threads=3", "--sqlite-sync", "normal", NULL};
    cr_assert_eq(hk_config_load(&c, 6, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_expect_eq(c.port, 9001);
    cr_expect_eq(c.threads, 3);
    cr_expect_eq(c.header_timeout_ms, 250u);
    cr_expect_not(c.sqlite_sync_full);
    hk_config_free(&c);
}

static void expect_error(const char *var, const char *value)
{
    clean_env();
    setenv(var, value, 1);
    struct hk_config c;
    char err[256] = "";
    char *argv[] = {"hookd", NULL};
    cr_expect_eq(hk_config_load(&c, 1, argv, err, sizeof err), HK_CONFIG_ERROR, "%s=%s accepted", var, value);
    cr_expect_not_null(strstr(err, var), "error \"%s\" does not name %s", err, var);
    cr_expect_null(strchr(err, '\n'));
    hk_config_free(&c);
    unsetenv(var);
}

Test(config, invalid_values_name_the_variable)
{
    expect_error("PORT", "abc");
    expect_error("PORT", "70000");
    expect_error("PORT", "80x");
    expect_error("PORT", "");
    expect_error("HOOKD_THREADS", "0");
    expect_error("HOOKD_MAX_BODY_BYTES", "-1");
    expect_error("HOOKD_HEADER_TIMEOUT", "xyz");
    expect_error("HOOKD_HEADER_TIMEOUT", "10parsecs");
    expect_error("HOOKD_SQLITE_SYNC", "sometimes");
    expect_error("HOOKD_LOG_LEVEL", "loud");
}

Test(config, unknown_flag_and_missing_value)
{
    struct hk_config c;
    char err[256] = "";
    char *argv[] = {"hookd", "--bogus", "1", NULL};
    cr_expect_eq(hk_config_load(&c, 3, argv, err, sizeof err), HK_CONFIG_ERROR);
    cr_expect_not_null(strstr(err, "--bogus"));
    hk_config_free(&c);
    char *argv2[] = {"hookd", "--port", NULL};
    cr_expect_eq(hk_config_load(&c, 2, argv2, err, sizeof err), HK_CONFIG_ERROR);
    cr_expect_not_null(strstr(err, "PORT"));
    hk_config_free(&c);
}

Test(config, durations)
{
    uint64_t ms;
    cr_expect_eq(hk_parse_duration_ms("1500", &ms), 0);
    cr_expect_eq(ms, 1500u);
    cr_expect_eq(hk_parse_duration_ms("2s", &ms), 0);
    cr_expect_eq(ms, 2000u);
    cr_expect_eq(hk_parse_duration_ms("3m", &ms), 0);
    cr_expect_eq(ms, 180000u);
    cr_expect_eq(hk_parse_duration_ms("1h", &ms), 0);
    cr_expect_eq(ms, 3600000u);
    cr_expect_eq(hk_parse_duration_ms("-1s", &ms), -1);
    cr_expect_eq(hk_parse_duration_ms("s", &ms), -1);
    cr_expect_eq(hk_parse_duration_ms("30d", &ms), 0);
    cr_expect_eq(ms, UINT64_C(2592000000));
    cr_expect_eq(hk_parse_duration_ms("1w", &ms), -1);
    cr_expect_eq(hk_parse_duration_ms("1dd", &ms), -1);
    cr_expect_eq(hk_parse_duration_ms("99999999999999999d", &ms), -1, "overflow");
}

Test(config, sizes)
{
    uint64_t b;
    cr_expect_eq(hk_parse_size("65536", &b), 0);
    cr_expect_eq(b, 65536u);
    cr_expect_eq(hk_parse_size("512KiB", &b), 0);
    cr_expect_eq(b, 512u * 1024);
    cr_expect_eq(hk_parse_size("64M", &b), 0);
    cr_expect_eq(b, UINT64_C(64) << 20);
    cr_expect_eq(hk_parse_size("2GiB", &b), 0);
    cr_expect_eq(b, UINT64_C(2) << 30);
    cr_expect_eq(hk_parse_size("1TiB", &b), 0);
    cr_expect_eq(b, UINT64_C(1) << 40);
    cr_expect_eq(hk_parse_size("1.5G", &b), -1);
    cr_expect_eq(hk_parse_size("-1", &b), -1);
    cr_expect_eq(hk_parse_size("1MB", &b), -1, "decimal units are not accepted: say MiB");
    cr_expect_eq(hk_parse_size("", &b), -1);
    cr_expect_eq(hk_parse_size("99999999999T", &b), -1, "overflow");
}

Test(config, secret_from_file)
{
    char path[] = "/tmp/hookd-secret-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "topsecret\n", 10), 10);
    close(fd);
    setenv("HOOKD_WEBHOOK_SECRET_FILE", path, 1);
    struct hk_config c;
    char err[256] = "";
    char *argv[] = {"hookd", NULL};
    cr_assert_eq(hk_config_load(&c, 1, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_expect_str_eq(c.webhook_secret, "topsecret");
    cr_expect_eq(c.webhook_secret_len, 9u);
    hk_config_free(&c);
    unlink(path);
}

/* A secret on the command line is visible to every user (ps, /proc): the
 * flag is remembered for main's warning and the value blanked in argv. */
Test(config, secret_flags_are_flagged_and_blanked)
{
    char a0[] = "hookd", a1[] = "--webhook-secret", a2[] = "hunter2", a3[] = "--database-url=postgresql://u:pw@db/x";
    char *argv[] = {a0, a1, a2, a3, NULL};
    struct hk_config c;
    char err[256] = "";
    cr_assert_eq(hk_config_load(&c, 4, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_expect_str_eq(c.webhook_secret, "hunter2");
    cr_expect_str_eq(c.database_url, "postgresql://u:pw@db/x");
    cr_expect_not_null(c.secret_flag);
    cr_expect_str_eq(a2, "*******");
    cr_expect_null(strstr(a3, "pw"), "%s", a3);
    hk_config_free(&c);
}

Test(config, urls_without_password_are_not_secrets)
{
    char a0[] = "hookd", a1[] = "--database-url", a2[] = "postgresql://u@db:5432/x";
    char *argv[] = {a0, a1, a2, NULL};
    struct hk_config c;
    char err[256] = "";
    cr_assert_eq(hk_config_load(&c, 3, argv, err, sizeof err), HK_CONFIG_RUN, "%s", err);
    cr_expect_null(c.secret_flag);
    cr_expect_str_eq(a2, "postgresql://u@db:5432/x");
    hk_config_free(&c);
}
