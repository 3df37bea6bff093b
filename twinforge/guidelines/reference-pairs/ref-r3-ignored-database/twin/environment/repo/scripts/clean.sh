#!/bin/bash
# Remove everything git ignores (build output and local files).
cd "$(dirname "$0")/.."
git clean -fdX
