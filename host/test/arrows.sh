#!/usr/bin/env bash
# The layer arrows of host/src (host/test/arrows.lua): run from the
# repository with the build directory; ends "arrows: N passed, N failed".
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
exec lua5.4 host/test/arrows.lua "${1:-build}"
