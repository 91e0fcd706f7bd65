#!/usr/bin/env bash
# The cnat scenario: an At scheduled a few seconds ahead goes PENDING -> RUNNING -> DONE and
# its pod's output shows in `kubectl logs`.
#
# `make demo` (or `kubeforge demo cnat`) plays it on a development cluster with the cnat
# controller running. On another cluster: install the CRD and run the controller first
# (`kubeforge install --dir examples/cnat`, `kubeforge run --dir examples/cnat`).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

schedule=$(date -u -d '+5 seconds' +%Y-%m-%dT%H:%M:%SZ)

say "The At kind is installed; kubectl knows its columns."
run kubectl get crd ats.cnat.kubeforge.dev

say "Schedule 'echo hello from cnat' for ${schedule} (five seconds from now)."
run kubectl apply -f - <<YAML
apiVersion: cnat.kubeforge.dev/v1alpha1
kind: At
metadata:
  name: hello
spec:
  schedule: "${schedule}"
  command: echo hello from cnat
YAML

say "Watch it move through its phases."
watch_in_background kubectl get ats --watch
run kubectl wait --for=jsonpath='{.status.phase}'=RUNNING at/hello --timeout=30s >/dev/null
run kubectl wait --for=jsonpath='{.status.phase}'=DONE at/hello --timeout=30s >/dev/null
stop_watch

say "The pod it ran, and what the command printed."
run kubectl get pods -l cnat.kubeforge.dev/at=hello
run kubectl logs hello

say "Written as v1alpha1, stored as v1: each version shows the command its own way (the manager's conversion webhook converts)."
run kubectl get ats.v1alpha1.cnat.kubeforge.dev hello -o jsonpath='{.spec.command}{"\n"}'
run kubectl get ats.v1.cnat.kubeforge.dev hello -o jsonpath='{.spec.command}{"\n"}'

say "A schedule that is not an RFC 3339 UTC time is rejected by the CRD's schema."
if run kubectl apply -f - <<YAML
apiVersion: cnat.kubeforge.dev/v1alpha1
kind: At
metadata:
  name: bad
spec:
  schedule: "tomorrow at nine"
  command: echo never
YAML
then
  echo "an invalid schedule was accepted" >&2
  exit 1
fi

say "Deleting the At deletes its pod too (garbage collection)."
run kubectl delete at hello --wait=true
run kubectl wait --for=delete pod/hello --timeout=30s
