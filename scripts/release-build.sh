#!/usr/bin/env bash
# The release build of the two executables, as scripts/install.sh installs them and the end-to-end
# suite, the soak and the measurements run them:
#   scripts/release-build.sh --product clicker-tally      (then --product clicker-vote; --show-bin-path)
# Static Swift runtime, and a section per function in every module, the dependencies and the C
# targets included (only the command line reaches the dependencies), so that lld can lay the
# tally's code out by Linker/clicker-tally.order (Package.swift, tallyLayout). And -internalize-at-link:
# the compiler otherwise marks every public symbol of a library module as used, so --gc-sections
# keeps it whether anything refers to it or not (the tally carried 3.1 MB of GRDB's, swift-crypto's,
# SwiftNIO's and the others' public API that it never calls; docs/PERFORMANCE.md, "Binary size").
# With it, lld drops them like any other unreferenced section; nothing looks them up by name (the
# executables export no symbols: Package.swift, `lean`). The code kept is compiled as before, except
# that the optimiser may now merge identical functions a public symbol used to pin.
set -euo pipefail
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
exec "$SWIFT" build -c release --static-swift-stdlib \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
  -Xswiftc -Xfrontend -Xswiftc -internalize-at-link "$@"
