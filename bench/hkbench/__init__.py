# SPDX-License-Identifier: MIT
"""hookd's benchmark harness (make compare): see bench/README.md."""
