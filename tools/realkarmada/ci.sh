#!/usr/bin/env bash
# The real-Karmada tier of CI: build (cached outside the checkout), bring a plane up, run the
# target-parametrised e2e scenarios against it, take it down. A missing tool, a failed build or
# bring-up, or a failed scenario fails the tier with one line naming it, never a skip.
# KARMADA_VERSION picks another release (default: tools.realkarmada's).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "real-Karmada tier: $*" >&2; exit 1; }
for tool in go kubectl; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found on PATH (the Go >= 1.25 toolchain and kubectl are needed)"
done
version=()
[[ -n "${KARMADA_VERSION:-}" ]] && version=(--karmada-version "$KARMADA_VERSION")
TIMEFORMAT='real-Karmada tier: %R s wall, %U s user + %S s sys CPU'
echo "real-Karmada tier: build (cached by go.sum; a cold one compiles for a while)"
time nice -n 10 python3 -m tools.realkarmada build "${version[@]}" \
  || fail "build failed (the line above names its log)"
python3 -m tools.realkarmada down >/dev/null  # a plane left behind by an earlier run
trap 'python3 -m tools.realkarmada down >/dev/null 2>&1 || true' EXIT
kubeconfig="$(mktemp)"
time python3 -m tools.realkarmada up "${version[@]}" --kubeconfig-out "$kubeconfig" \
  || fail "bring-up failed (the lines above name the process and its log)"
# The scenarios reuse the healthy plane just brought up.
time python3 -m pytest -q -p no:cacheprovider tests/e2e -k targets --karmada=real \
  ${KARMADA_VERSION:+--karmada-version "$KARMADA_VERSION"} \
  || fail "scenarios failed on real Karmada (see the pytest report above)"
