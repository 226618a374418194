# Debian package selection shared by setup.sh and install.sh (sourced, not run). A package spec is a name, or
# alternatives "a|b" for a package whose name differs between releases or derivatives: the machine's answer
# (dpkg, apt-cache) picks the name, not the script. Debian 12 and 13 offer every name the project lists as it
# is (the t64 renames in trixie, e.g. libasound2t64 and libsphinxbase3t64, are only dependencies of them);
# scripts/check-debian-root.sh proves both releases.

# deb_installed NAME: true when the package is installed.
deb_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# deb_unmet SPEC...: prints, one per line, each spec none of whose alternatives is installed.
deb_unmet() {
  local spec alt met alts
  for spec in "$@"; do
    met=0
    IFS='|' read -ra alts <<< "$spec"
    for alt in "${alts[@]}"; do deb_installed "$alt" && { met=1; break; }; done
    [ "$met" = 1 ] || echo "$spec"
  done
}

# deb_pick SPEC...: prints, one per line, the name to install for each spec: the first alternative apt-cache has
# an installable candidate for (a purely virtual name has none), else the first one, so that apt-get's error
# names it. Run after `apt-get update`: before it a fresh machine's apt-cache knows nothing.
deb_pick() {
  local spec alt pick cand alts
  for spec in "$@"; do
    IFS='|' read -ra alts <<< "$spec"
    pick=${alts[0]}
    for alt in "${alts[@]}"; do
      cand=$(apt-cache policy "$alt" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
      if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then pick=$alt; break; fi
    done
    echo "$pick"
  done
}
