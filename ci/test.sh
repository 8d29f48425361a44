#!/usr/bin/env bash
# What CI runs: the README's test command (it creates .venv and installs what it needs).
set -euo pipefail
cd "$(dirname "$0")/.."
make test
