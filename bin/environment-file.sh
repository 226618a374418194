# Sourced (sh), not run: load_environment_file FILE exports the variables of a systemd EnvironmentFile.
#
# The installed `speaker-agent` command (scripts/install.sh writes it) loads the unit's EnvironmentFile
# (/etc/speaker-agent/environment, companion.env for `speaker-agent companion ...`), so `sudo speaker-agent
# doctor`, `status` and `enroll` see what the service sees: a device or server set there, a CA in
# NODE_EXTRA_CA_CERTS. Before, doctor checked other settings than the running agent's.
# Read as systemd reads the lines a maker writes, never run as shell code: KEY=VALUE, # and ; comments, blanks
# around the '=' and the value, one pair of quotes around it, the last line of a key wins (backslash escapes,
# continued lines and a quote left open are not read as systemd reads them). A variable already set (on the command
# line) wins. A file that is missing or not readable (no sudo) loads nothing.
load_environment_file() {
  [ -r "$1" ] || return 0
  _loaded=' '
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line#"${line%%[![:space:]]*}"}
    case "$line" in '' | '#'* | ';'*) continue ;; esac
    key=${line%%=*}
    [ "$key" != "$line" ] || continue # no '='
    key=${key%"${key##*[![:space:]]}"}
    case "$key" in '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;; esac # systemd ignores an invalid name too
    # set before this file was read: the caller's; set by an earlier line: replaced, as systemd does
    case "$_loaded" in *" $key "*) ;; *) printenv "$key" >/dev/null && continue ;; esac
    _loaded="$_loaded$key "
    value=${line#*=}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    case "$value" in \"*\" | \'*\') value=${value#?} value=${value%?} ;; esac
    export "$key=$value"
  done <"$1"
  unset line key value _loaded
}
