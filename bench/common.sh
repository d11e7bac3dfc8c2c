# bench/common.sh: what the benchmarks and demo/run share (sourced, not run).
#
# The scripts run as root and run the servers and their clients as PG_USER
# (postgres), the owner of the data directories.

export PG_USER=${PG_USER:-postgres}

# as_pg CMD [ARG...]: runs CMD as $PG_USER with its groups; the environment
# and the working directory stay.
as_pg() { setpriv --reuid="$PG_USER" --regid="$(id -g "$PG_USER")" --init-groups -- "$@"; }
