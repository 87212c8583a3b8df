# SPDX-License-Identifier: MIT
"""Build-variant helpers that need no compiler."""
import os
import tempfile
import unittest

from hkbench import builds


class Helpers(unittest.TestCase):
    def test_meson_list(self):
        self.assertEqual(builds.meson_list(["-static", "-L/x y"]), "['-static','-L/x y']")
        self.assertEqual(builds.meson_list([]), "[]")

    def test_fingerprint_follows_sources(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "src", "core"))
            with open(os.path.join(d, "src", "core", "a.c"), "w") as f:
                f.write("int a;\n")
            one = builds.fingerprint(d)
            self.assertEqual(one, builds.fingerprint(d))
            with open(os.path.join(d, "src", "core", "a.c"), "w") as f:
                f.write("int a = 1;\n")
            self.assertNotEqual(one, builds.fingerprint(d))

    def test_binary_info_of_a_dynamic_binary(self):
        info = builds.binary_info("/bin/true")
        self.assertGreater(info["sizeBytes"], 0)
        self.assertFalse(info["static"])
        self.assertGreater(info["sharedObjects"], 0)


if __name__ == "__main__":
    unittest.main()
