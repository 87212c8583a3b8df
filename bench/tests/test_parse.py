# SPDX-License-Identifier: MIT
"""Parsers of wrk output, start-up lines, /proc files and pgbench output."""
import unittest

from hkbench import parse

WRK_JSON = ('HKBENCH_JSON {"durationUs":3001877,"requests":45654,"bytes":496895745,'
            '"errors":{"connect":0,"read":2,"write":1,"status":7,"timeout":3},'
            '"latencyUs":{"min":37.000,"max":18845.000,"mean":3559.637,"stdev":2626.308,"p50":2632.000,'
            '"p75":4838.000,"p90":7229.000,"p99":12404.000,"p999":15968.000},'
            '"statusClasses":{"1xx":0,"2xx":45640,"3xx":0,"4xx":4,"5xx":10},"bucketMs":1000,'
            '"perBucket":[15129,15339,15143,43]}')

WRK_TEXT = """Running 3s test @ http://127.0.0.1:18081
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.56ms    2.63ms  18.84ms   80.98%
    Req/Sec    15.31k   703.66    16.71k    70.00%
  Latency Distribution
     50%  263.00us
     75%    4.84ms
     90%    7.23ms
     99%    1.24s
  45654 requests in 3.00s, 473.88MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 17
Requests/sec:  15208.48
Transfer/sec:    157.86MB
"""

SMAPS = """55d0c0a00000-7ffd1e7f7000 ---p 00000000 00:00 0                          [rollup]
Rss:                4132 kB
Pss:                2684 kB
Pss_Dirty:          1800 kB
Pss_Anon:           1700 kB
Shared_Clean:       1700 kB
Shared_Dirty:          0 kB
Private_Clean:       600 kB
Private_Dirty:      1836 kB
Referenced:         4132 kB
Anonymous:          1700 kB
Swap:                  0 kB
"""

PGBENCH = """pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: multiple scripts
scaling factor: 1
query mode: prepared
number of clients: 10
number of threads: 1
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 123456
number of failed transactions: 0 (0.000%)
latency average = 0.810 ms
latency stddev = 0.402 ms
initial connection time = 25.123 ms
tps = 12345.678901 (without initial connection time)
SQL script 1: /work/main/bench/pgbench/list.sql
 - weight: 60 (targets 70.6% of total)
 - 87000 transactions (70.5% of total, tps = 8700.000000)
 - number of failed transactions: 0 (0.000%)
 - latency average = 0.900 ms
SQL script 2: /work/main/bench/pgbench/insert.sql
 - weight: 25 (targets 29.4% of total)
 - 36456 transactions (29.5% of total, tps = 3645.600000)
 - number of failed transactions: 0 (0.000%)
"""


class WrkJson(unittest.TestCase):
    def test_figures(self):
        p = parse.parse_wrk_json("Running 3s test\nsome text\n" + WRK_JSON + "\n")
        self.assertEqual(p["requests"], 45654)
        self.assertAlmostEqual(p["durationS"], 3.001877)
        self.assertAlmostEqual(p["rps"], 45654 / 3.001877)
        self.assertAlmostEqual(p["p50Ms"], 2.632)
        self.assertAlmostEqual(p["p90Ms"], 7.229)
        self.assertAlmostEqual(p["p99Ms"], 12.404)
        self.assertEqual(p["non2xx"], 14)
        self.assertEqual(p["socketErrors"], {"connect": 0, "read": 2, "write": 1, "timeout": 3})
        self.assertEqual(p["socketErrorsTotal"], 6)
        self.assertEqual(p["perBucket"], [15129, 15339, 15143, 43])

    def test_plain_script_counts_wrk_status_errors(self):
        line = WRK_JSON.replace('"statusClasses":{"1xx":0,"2xx":45640,"3xx":0,"4xx":4,"5xx":10},"bucketMs":1000,'
                                '"perBucket":[15129,15339,15143,43]', '"statusClasses":null,"bucketMs":null,'
                                '"perBucket":null')
        p = parse.parse_wrk_json(line)
        self.assertEqual(p["non2xx"], 7)
        self.assertNotIn("perBucket", p)

    def test_missing_line(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_wrk_json(WRK_TEXT)

    def test_broken_line(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_wrk_json("HKBENCH_JSON {not json")

    def test_last_line_wins(self):
        p = parse.parse_wrk_json(WRK_JSON.replace("45654", "1") + "\n" + WRK_JSON)
        self.assertEqual(p["requests"], 45654)


class WrkText(unittest.TestCase):
    def test_report(self):
        p = parse.parse_wrk_text(WRK_TEXT)
        self.assertEqual(p["requests"], 45654)
        self.assertAlmostEqual(p["durationS"], 3.0)
        self.assertAlmostEqual(p["rps"], 15208.48)
        self.assertAlmostEqual(p["p50Ms"], 0.263)
        self.assertAlmostEqual(p["p75Ms"], 4.84)
        self.assertAlmostEqual(p["p99Ms"], 1240.0)
        self.assertEqual(p["socketErrors"], {"connect": 1, "read": 2, "write": 3, "timeout": 4})
        self.assertEqual(p["non2xx"], 17)

    def test_clean_run_has_zero_errors(self):
        text = "\n".join(l for l in WRK_TEXT.splitlines() if "errors" not in l and "Non-2xx" not in l)
        p = parse.parse_wrk_text(text)
        self.assertEqual(p["socketErrorsTotal"], 0)
        self.assertEqual(p["non2xx"], 0)

    def test_not_wrk(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_wrk_text("unable to connect to 127.0.0.1:1 Connection refused")


class StartedLine(unittest.TestCase):
    def test_hookd(self):
        self.assertAlmostEqual(parse.parse_started_line(
            "hookd 0.1.0 started in 0.003874s. Listening on: http://0.0.0.0:8080"), 3.874)

    def test_quarkus(self):
        self.assertAlmostEqual(parse.parse_started_line(
            "2026-05-03 23:34:43,120 INFO  [io.quarkus] (main) app 1.0 native (powered by Quarkus 3.35.1) "
            "started in 0.174s. Listening on: http://0.0.0.0:8080"), 174.0)

    def test_milliseconds(self):
        self.assertAlmostEqual(parse.parse_started_line("server started in 12ms"), 12.0)
        self.assertAlmostEqual(parse.parse_started_line("Started in 2 s"), 2000.0)

    def test_absent(self):
        self.assertIsNone(parse.parse_started_line(None))
        self.assertIsNone(parse.parse_started_line(""))
        self.assertIsNone(parse.parse_started_line("Listening on :8080"))
        self.assertIsNone(parse.parse_started_line("started in no time"))


class Proc(unittest.TestCase):
    def test_smaps_rollup(self):
        self.assertEqual(parse.parse_smaps_rollup(SMAPS),
                         {"rssKb": 4132, "pssKb": 2684, "ussKb": 2436, "swapKb": 0})

    def test_smaps_without_rss(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_smaps_rollup("nothing here\n")

    def test_status(self):
        f = parse.parse_kb_fields("Name:\thookd\nVmHWM:\t   23456 kB\nVmRSS:\t    4100 kB\nThreads:\t3\n")
        self.assertEqual(f, {"VmHWM": 23456, "VmRSS": 4100})

    def test_stat_with_odd_name(self):
        s = "1234 (we ird) (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 3 4 20 0 2 0 100 1000 200\n"
        st = parse.parse_proc_stat(s)
        self.assertEqual(st["comm"], "we ird) (x)")
        self.assertEqual((st["state"], st["ppid"]), ("S", 1))
        self.assertEqual((st["utime"], st["stime"], st["cutime"], st["cstime"]), (250, 75, 3, 4))
        self.assertEqual(st["num_threads"], 2)

    def test_cpu_times(self):
        busy, total, steal = parse.parse_cpu_times("cpu  100 5 50 1000 20 1 2 7 0 0\ncpu0 1 2 3 4\n")
        self.assertEqual((busy, total, steal), (165, 1185, 7))

    def test_loadavg(self):
        self.assertEqual(parse.parse_loadavg("1.45 0.77 1.30 2/345 6789\n"),
                         {"load1": 1.45, "load5": 0.77, "load15": 1.30})


class Pgbench(unittest.TestCase):
    def test_summary(self):
        p = parse.parse_pgbench(PGBENCH)
        self.assertAlmostEqual(p["tps"], 12345.678901)
        self.assertAlmostEqual(p["latencyAvgMs"], 0.81)
        self.assertEqual(p["transactions"], 123456)
        self.assertEqual(p["failed"], 0)
        self.assertEqual([s["weight"] for s in p["scripts"]], [60, 25])
        self.assertAlmostEqual(p["scripts"][1]["tps"], 3645.6)

    def test_error(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_pgbench('pgbench: error: connection to server failed: FATAL: database "x" does not exist')


class Warmup(unittest.TestCase):
    def test_windows(self):
        per = [100] * 5 + [200] * 20 + [300] * 30 + [17]
        early, late = parse.warmup_windows(per, 1000, 55.2, 5, 25)
        self.assertEqual(early, 100.0)
        self.assertEqual(late, 300.0)  # the partial last bucket is left out

    def test_short_run(self):
        early, late = parse.warmup_windows([10, 10, 3], 1000, 2.1, 5, 25)
        self.assertIsNone(early)
        self.assertIsNone(late)

    def test_sub_second_buckets(self):
        early, late = parse.warmup_windows([5, 5, 10, 10, 1], 500, 2.2, 1, 1)
        self.assertEqual((early, late), (10.0, 20.0))

    def test_nothing(self):
        self.assertEqual(parse.warmup_windows(None, None, 10, 5, 25), (None, None))


class Coldstart(unittest.TestCase):
    def test_lines(self):
        out = ('{"run":0,"status":200,"readyMs":2.5,"polls":3,"rssKb":4000,"pssKb":3000,"ussKb":2500,'
               '"startedLine":"hookd 0.1.0 started in 0.001200s. Listening on: http://127.0.0.1:1",'
               '"appStartMs":1.2}\n{"run":1,"status":200,"readyMs":2.1,"polls":2,"rssKb":4000,"pssKb":3000,'
               '"ussKb":2500,"startedLine":null,"appStartMs":null}\n')
        runs = parse.parse_coldstart(out)
        self.assertEqual(len(runs), 2)
        self.assertEqual(runs[0]["readyMs"], 2.5)
        self.assertAlmostEqual(parse.parse_started_line(runs[0]["startedLine"]), 1.2)
        self.assertIsNone(runs[1]["startedLine"])

    def test_none(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_coldstart("coldstart: the server exited before answering\n")


if __name__ == "__main__":
    unittest.main()
