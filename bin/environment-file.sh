# Sourced (sh), not run: load_environment_file FILE exports the variables of a systemd EnvironmentFile.
#
# The installed `speaker-agent` command (scripts/install.sh writes it) loads the unit's EnvironmentFile
# (/etc/speaker-agent/environment, companion.env for `speaker-agent companion ...`), so `sudo speaker-agent
# doctor`, `status` and `enroll` see what the service sees: a device or server set there, a CA in
# NODE_EXTRA_CA_CERTS. Before, doctor checked other settings than the running agent's.
# Read as systemd reads the lines a maker writes, never run as shell code: KEY=VALUE, # and ; comments, blanks
# around the '=' and the value, one pair of quotes around it (backslash escapes and continued lines are not
# read). A variable already set (on the command line) wins. A file that is missing or not readable (no sudo)
# loads nothing.
load_environment_file() {
  [ -r "$1" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line#"${line%%[![:space:]]*}"}
    case "$line" in '' | '#'* | ';'*) continue ;; esac
    key=${line%%=*}
    [ "$key" != "$line" ] || continue # no '='
    key=${key%"${key##*[![:space:]]}"}
    case "$key" in '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;; esac # systemd ignores an invalid name too
    printenv "$key" >/dev/null && continue
    value=${line#*=}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    case "$value" in \"*\" | \'*\') value=${value#?} value=${value%?} ;; esac
    export "$key=$value"
  done <"$1"
  unset line key value
}
