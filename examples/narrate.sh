# Helpers for the examples' demo.sh scripts, sourced by each: say what comes next, then show
# each command before running it, as a person typing them would see it.

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  _say_on=$'\033[36m' _cmd_on=$'\033[1m' _off=$'\033[0m'
else
  _say_on='' _cmd_on='' _off=''
fi

# say TEXT: a heading for the next step.
say() { printf '\n%s# %s%s\n' "$_say_on" "$*" "$_off"; }

# run COMMAND...: print the command, then run it (a failure ends the demo under `set -e`).
run() { printf '%s$ %s%s\n' "$_cmd_on" "$*" "$_off"; "$@"; }

# watch_in_background COMMAND...: start a watch (e.g. `kubectl get ats -w`) whose output
# interleaves with the steps that follow; stop_watch ends it.
watch_in_background() {
  printf '%s$ %s &%s\n' "$_cmd_on" "$*" "$_off"
  "$@" &
  _watch_pid=$!
}
stop_watch() {
  if [ -n "${_watch_pid:-}" ]; then
    kill "$_watch_pid" 2>/dev/null || true
    wait "$_watch_pid" 2>/dev/null || true
    _watch_pid=''
  fi
}
trap stop_watch EXIT

# wait_replaced KIND/NAME OLD_UID [SECONDS]: wait until NAME is held by an object with another
# UID. After deleting something a controller makes again under the same name (a StatefulSet's
# pod, say), use this with `kubectl delete --wait=false`: kubectl's own wait for a deletion
# looks the name up again and, if it finds the successor there already, waits for a deletion
# event that has passed.
wait_replaced() {
  local target=$1 old=$2 limit=${3:-30} uid
  local deadline=$((SECONDS + limit))
  printf '%s$ # until %s has a UID other than %s%s\n' "$_cmd_on" "$target" "$old" "$_off"
  while ((SECONDS < deadline)); do
    uid=$(kubectl get "$target" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
    if [ -n "$uid" ] && [ "$uid" != "$old" ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "${target} was not made again within ${limit}s" >&2
  return 1
}
