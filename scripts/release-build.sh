#!/usr/bin/env bash
# The release build of the two executables, as scripts/install.sh installs them and the end-to-end
# suite, the soak and the measurements run them:
#   scripts/release-build.sh --product clicker-tally      (then --product clicker-vote; --show-bin-path)
# Static Swift runtime, and a section per function in every module, the dependencies and the C
# targets included (only the command line reaches the dependencies), so that lld can lay the
# tally's code out by Linker/clicker-tally.order (Package.swift, tallyLayout).
set -euo pipefail
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
exec "$SWIFT" build -c release --static-swift-stdlib \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections "$@"
