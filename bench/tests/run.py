#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs the harness's unit tests (bench/tests/test_*.py) and ends with the
same "Synthesis:" line as the Criterion programs, so scripts/test.sh counts
each case. Exit status 0 only when every case passed."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(here))
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
failing = len(result.failures) + len(result.unexpectedSuccesses)
crashing = len(result.errors)
tested = result.testsRun
print(f"Synthesis: Tested: {tested} | Passing: {tested - failing - crashing - len(result.skipped)} | "
      f"Failing: {failing} | Crashing: {crashing}")
sys.exit(0 if result.wasSuccessful() and tested > 0 else 1)
