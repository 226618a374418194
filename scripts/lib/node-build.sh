# Shared by scripts/setup.sh and scripts/install.sh (sourced): the Node.js checks and native-addon builds.
#   node_supported_or_exit    stops with how to fix it when the node on the PATH is older than 20.10
#   npm_matches_node_or_exit  stops when Debian's npm would build the addons for Debian's Node instead of this one
#   use_matching_node_headers exports npm_config_nodedir: headers of exactly this node's version
#   ensure_addons DIR         checks every native addon of DIR in this node; rebuilds the failing ones once
#   vendored_addons_built DIR, vendored_addons_current DIR, ensure_vendored_addons_current DIR
#                             the addons built from vendor/: records their sources' hash, compares it, rebuilds
NODE_MIN="20.10"

node_supported_or_exit() {
  if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1)'; then
    cat >&2 <<MSG
Node.js $(node -p process.version) ($(command -v node)) is too old: speaker-agent needs Node $NODE_MIN or newer.
Fix it with one of these, then run this script again:
  - Debian 13 / Raspberry Pi OS trixie:  sudo apt-get install nodejs npm          (Debian's Node 20)
  - any release, from the npm registry:  sudo npm install -g node@24 npm@11      (official builds, in /usr/local/bin)
  - or Node 22, 24 or 26 from your distribution's or Node's own packages, first on the PATH
MSG
    exit 3
  fi
}

# Debian's npm runs Debian's node-gyp, which builds every addon against Debian's own Node (it links libnode): with
# any other Node first on the PATH the addons then carry a second Node runtime and crash the process at exit.
npm_matches_node_or_exit() {
  local npm_cli
  npm_cli=$(readlink -f "$(command -v npm)" 2>/dev/null || true)
  if [ "$(node -p 'process.config.variables.node_shared === true')" = false ] && [[ "$npm_cli" == "${DEBIAN_NODEJS_DIR:-/usr/share/nodejs}"/* ]]; then
    cat >&2 <<MSG
npm is Debian's ($npm_cli), but node is not ($(command -v node), $(node -p process.version)): Debian's npm builds
native addons for Debian's own Node. Install npm for this Node, then run this script again:
  sudo npm install -g npm@11        (from the npm registry, in /usr/local/bin, ahead of /usr/bin on the PATH)
MSG
    exit 3
  fi
}

# Native addons compile against the headers of the node that runs them. node-gyp takes them from `nodedir` (or
# downloads them from nodejs.org, which is not an install source here), and a user's npm configuration may name
# another Node's headers: then every addon fails at the first run with "NODE_MODULE_VERSION 115 ... 137". So
# nodedir is set here to headers whose version is exactly this node's: beside the binary (official builds,
# NodeSource), in the npm registry's node package (`npm install -g node@24`) or Debian's libnode-dev in /usr.
use_matching_node_headers() {
  local node_version d
  node_version=$(node -p process.versions.node)
  headers_version() { # prints the version a headers dir is for, or nothing
    local h="$1/include/node/node_version.h"
    [ -f "$h" ] && [ -f "$1/include/node/common.gypi" ] || return 0
    awk '/define NODE_(MAJOR|MINOR|PATCH)_VERSION/ { v[$2] = $3 } END { print v["NODE_MAJOR_VERSION"] "." v["NODE_MINOR_VERSION"] "." v["NODE_PATCH_VERSION"] }' "$h"
  }
  local node_prefix configured nodedir
  node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
  configured=${npm_config_nodedir:-$(npm config get nodedir 2>/dev/null || true)}
  [ "$configured" = "undefined" ] || [ "$configured" = "null" ] && configured=""
  nodedir=""
  # `npm install -g node@N` keeps the binary in .../node/bin and its headers in .../node/node_modules/node-linux-<arch>
  for d in "$configured" "$node_prefix" "$node_prefix"/node_modules/node-linux-* /usr; do
    [ -n "$d" ] && [ "$(headers_version "$d")" = "$node_version" ] && { nodedir=$d; break; }
  done
  if [ -n "$configured" ] && [ "$nodedir" != "$configured" ]; then
    echo "==> note: npm's nodedir ($configured) holds headers of Node $(headers_version "$configured"), not $node_version: not using it" >&2
  fi
  if [ -n "$nodedir" ]; then
    export npm_config_nodedir="$nodedir"
  else
    echo "==> note: no headers for Node $node_version beside it or in /usr (libnode-dev): node-gyp will try to download them" >&2
  fi
}

ensure_addons() { # DIR: the project whose node_modules is checked
  local node_version broken
  node_version=$(node -p process.versions.node)
  echo "==> checking the native addons in Node $node_version"
  node "$1/scripts/check-addons.mjs" && return 0
  mapfile -t broken < <(node "$1/scripts/check-addons.mjs" --failed)
  if [ ${#broken[@]} -gt 0 ] && [ -n "${broken[0]}" ]; then
    echo "==> rebuilding ${broken[*]} from source for Node $node_version"
    (cd "$1" && npm_config_build_from_source=true npm rebuild "${broken[@]}" --no-audit --no-fund) || true
    node "$1/scripts/check-addons.mjs" && return 0
  fi
  cat >&2 <<MSG
A native addon does not load in Node $node_version ($(command -v node)); the FAILED line above says which.
  - "NODE_MODULE_VERSION": it was built for another Node. This Node's headers must be beside it
    ($(dirname "$(dirname "$(readlink -f "$(command -v node)")")")/include/node) or in /usr/include/node (Debian's
    libnode-dev for Debian's nodejs); check 'npm config get nodedir', then: rm -rf node_modules, and run this again
  - a missing library (libportaudio, libasound): run scripts/setup.sh as a user who may use sudo apt-get
MSG
  return 1
}

# The addons built from this project's own sources (vendor/naudiodon2, vendor/speaker-sys): npm ci builds them, but
# an update that changes only their sources leaves package-lock.json and the Node ABI as they were, so neither
# stamp would rebuild them, and check-addons.mjs finds an old build that still loads (a fix in its C would never
# reach the board). A hash of their sources, recorded at each build, does.
VENDORED_ADDONS=(naudiodon2 speaker-sys)
vendored_addons_sum() { # DIR: prints a hash of what their builds read: binding.gyp, package.json, src/ (paths, contents)
  (cd "$1" && for a in "${VENDORED_ADDONS[@]}"; do
    printf '%s\0' "vendor/$a/binding.gyp" "vendor/$a/package.json"; find "vendor/$a/src" -type f -print0
  done | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
vendored_addons_built() { # DIR: records that its vendored addons were built from the sources there now
  vendored_addons_sum "$1" > "$1/node_modules/.speaker-agent-vendored.sha256"
}
vendored_addons_current() { # DIR: whether its vendored addons were built from the sources there now
  [ "$(cat "$1/node_modules/.speaker-agent-vendored.sha256" 2>/dev/null)" = "$(vendored_addons_sum "$1")" ]
}
ensure_vendored_addons_current() { # DIR: rebuilds its vendored addons when their sources changed since the last build
  vendored_addons_current "$1" && return 0
  if [ -f "$1/node_modules/.speaker-agent-vendored.sha256" ]; then
    echo "==> rebuilding ${VENDORED_ADDONS[*]} (their sources changed since they were built)"
  else # built before this record was kept (or by hand): once
    echo "==> rebuilding ${VENDORED_ADDONS[*]} (no record of the sources they were built from)"
  fi
  # a failed build is not recorded (the next run tries again); ensure_addons then names what does not load
  (cd "$1" && npm_config_build_from_source=true npm rebuild "${VENDORED_ADDONS[@]}" --no-audit --no-fund) && vendored_addons_built "$1"
}

# onnxruntime-node (the wake word engine's runtime) ships its CPU libraries in the npm package; its install script
# would also fetch CUDA libraries from outside the npm registry on x86-64. npm 11 skips it (package.json
# allowScripts); older npm runs it, so it is told to skip here.
export ONNXRUNTIME_NODE_INSTALL=skip
