# SPDX-License-Identifier: MIT
"""The container start with runc directly: the bundle's config as the
measurement changes it, when the measurement declines to run, and how the
report shows it beside podman's figure."""
import copy
import os
import tempfile
import unittest
from unittest import mock

from hkbench import measure, report

# What umoci unpack writes for hookd's image (trimmed to what matters).
UMOCI = {
    "ociVersion": "1.0.0",
    "process": {
        "terminal": True, "user": {"uid": 65532, "gid": 65532}, "args": ["/hookd"],
        "env": ["PATH=/usr/bin:/bin", "HOOKD_SQLITE_PATH=/data/hookd.db", "SQLITE_TMPDIR=/data", "PORT=8080"],
        "cwd": "/data", "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True,
    },
    "root": {"path": "rootfs"},
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
    "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]},
              "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"},
                             {"type": "mount"}]},
}


class Config(unittest.TestCase):
    def setUp(self):
        self.before = copy.deepcopy(UMOCI)
        self.c = measure.runc_config(UMOCI, 41234, "/tmp/x/data", [0])

    def test_input_untouched(self):
        self.assertEqual(UMOCI, self.before)

    def test_host_network_on_the_given_port(self):
        self.assertNotIn("network", [n["type"] for n in self.c["linux"]["namespaces"]])
        self.assertEqual([n["type"] for n in self.c["linux"]["namespaces"]], ["pid", "ipc", "uts", "mount"])
        env = self.c["process"]["env"]
        self.assertIn("PORT=41234", env)
        self.assertNotIn("PORT=8080", env)
        self.assertIn("HOOKD_HOST=127.0.0.1", env)

    def test_image_settings_kept(self):
        p = self.c["process"]
        self.assertEqual((p["args"], p["user"], p["cwd"]), (["/hookd"], {"uid": 65532, "gid": 65532}, "/data"))
        self.assertIn("HOOKD_SQLITE_PATH=/data/hookd.db", p["env"])
        self.assertTrue(p["noNewPrivileges"])
        self.assertEqual(self.c["linux"]["resources"]["devices"], UMOCI["linux"]["resources"]["devices"])

    def test_fresh_data_cpus_no_terminal_and_podman_s_nofile(self):
        self.assertFalse(self.c["process"]["terminal"])
        self.assertIn({"destination": "/data", "type": "bind", "source": "/tmp/x/data", "options": ["rbind", "rw"]},
                      self.c["mounts"])
        self.assertEqual(self.c["linux"]["resources"]["cpu"], {"cpus": "0"})
        self.assertEqual(self.c["process"]["rlimits"],
                         [{"type": "RLIMIT_NOFILE", "hard": measure.RUNC_NOFILE, "soft": measure.RUNC_NOFILE}])

    def test_applying_twice_changes_nothing_more(self):
        self.assertEqual(measure.runc_config(self.c, 41234, "/tmp/x/data", [0]), self.c)


class Declines(unittest.TestCase):
    def cfg(self, d):
        return measure.Config(work=d, cold_runs=2, coldstart="/nonexistent")

    def target(self):
        return mock.Mock(variant="release", health="/q/health/ready", name="hookd-release-sqlite")

    def test_without_tools(self):
        with tempfile.TemporaryDirectory() as d, mock.patch("shutil.which", return_value=None):
            r = measure.runc_start(self.cfg(d), self.target(), {"status": "built"})
        self.assertEqual(r["status"], "skipped")
        self.assertIn("runc", r["reason"])

    def test_without_an_image(self):
        with tempfile.TemporaryDirectory() as d, mock.patch("shutil.which", return_value="/usr/bin/x"), \
                mock.patch("os.geteuid", return_value=0):
            r = measure.runc_start(self.cfg(d), self.target(), {"status": "failed", "reason": "umoci broke"})
            self.assertEqual((r["status"], r["reason"]), ("skipped", "umoci broke"))
            docker = os.path.join(d, "hookd-image.docker.tar")
            open(docker, "w").close()
            r = measure.runc_start(self.cfg(d), self.target(),
                                   {"status": "built", "dockerArchive": docker, "tag": "dev.local/hookd:1"})
            self.assertEqual(r["status"], "skipped")
            self.assertIn("oci-archive", r["reason"])

    def test_not_root(self):
        with tempfile.TemporaryDirectory() as d, mock.patch("shutil.which", return_value="/usr/bin/x"), \
                mock.patch("os.geteuid", return_value=1000):
            r = measure.runc_start(self.cfg(d), self.target(), {"status": "built"})
        self.assertEqual(r["status"], "skipped")
        self.assertIn("root", r["reason"])


class Report(unittest.TestCase):
    def test_both_figures(self):
        T = {"hookd-release-sqlite": {
            "kind": "hookd", "store": "sqlite",
            "container": {"status": "ok", "coldStartMs": 910.0, "medianMs": 880.5},
            "containerRunc": {"status": "ok", "coldStartMs": 61.2, "medianMs": 48.0, "noisy": True}},
             "hookd-static-sqlite": {
            "kind": "hookd", "store": "sqlite",
            "container": {"status": "skipped", "reason": "podman not installed"},
            "containerRunc": {"status": "failed", "reason": "coldstart: no 200"}},
             "nginx": {"kind": "nginx"}}
        text = "\n".join(report.container_lines(T))
        self.assertIn("podman run -> first 200:", text)
        self.assertIn("runc run (OCI bundle, no podman) -> first 200:", text)
        self.assertRegex(text, r"hookd-release-sqlite +first 910\.0 ms, median 880\.5 ms\n")
        self.assertRegex(text, r"hookd-release-sqlite +first 61\.2 ms, median 48\.0 ms \(noisy\)")
        self.assertRegex(text, r"hookd-static-sqlite +skipped: podman not installed")
        self.assertRegex(text, r"hookd-static-sqlite +failed: coldstart: no 200")
        self.assertNotIn("nginx", text)

    def test_old_documents_without_runc(self):
        T = {"hookd-release-sqlite": {"kind": "hookd", "store": "sqlite",
                                      "container": {"status": "ok", "coldStartMs": 900.0, "medianMs": 850.0}}}
        lines = report.container_lines(T)
        self.assertNotIn("runc", "\n".join(lines))
        self.assertEqual(len(lines), 3)


if __name__ == "__main__":
    unittest.main()
