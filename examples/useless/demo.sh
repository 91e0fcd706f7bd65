#!/usr/bin/env bash
# The useless machine, in its two stages. Stage 1: a Machine's own switch, turned up, goes
# back down 5 seconds later. Stage 2: a Machine keeps N Switch objects and turns any that
# go up back down, at most one every 5 seconds; it scales, adopts a switch moved to it by
# relabelling, and takes its switches with it when deleted.
#
# `make demo` (or `kubeforge demo useless`) plays it on a development cluster with both
# controllers running. On another cluster: install the CRDs and run the controllers first
# (`kubeforge install --dir examples/useless`, `kubeforge run --dir examples/useless`).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

up='{"spec":{"position":"up"}}'

say "Machines and Switches are installed; kubectl knows their columns."
run kubectl get crd machines.useless.container.training switches.useless.container.training

say "Stage 1: a machine whose switch is up. The controller notes when it saw it (SEEN)..."
run kubectl apply -f - <<YAML
apiVersion: useless.container.training/v1alpha1
kind: Machine
metadata:
  name: machine-1
spec:
  switchPosition: up
YAML
watch_in_background kubectl get machine machine-1 --watch
run kubectl wait --for=jsonpath='{.status.seenAt}' machine/machine-1 --timeout=20s
say "... and turns it back down 5 seconds later."
run kubectl wait --for=jsonpath='{.spec.switchPosition}'=down machine/machine-1 --timeout=20s
stop_watch
run kubectl get machine machine-1

say "Stage 2: a machine with three switches. It makes them, labelled with its name."
run kubectl apply -f - <<YAML
apiVersion: useless.container.training/v1alpha1
kind: Machine
metadata:
  name: machine-2
spec:
  switches: 3
YAML
run kubectl wait --for=jsonpath='{.status.positions}'=ddd machine/machine-2 --timeout=20s
run kubectl get switches -l machine=machine-2

say "Turn two of its switches up: it turns them back down, at most one every 5 seconds."
first=$(kubectl get switches -l machine=machine-2 -o jsonpath='{.items[0].metadata.name}')
second=$(kubectl get switches -l machine=machine-2 -o jsonpath='{.items[1].metadata.name}')
watch_in_background kubectl get machine machine-2 -o wide --watch
run kubectl patch switch "$first" --type=merge -p "$up"
run kubectl patch switch "$second" --type=merge -p "$up"
run kubectl wait --for=jsonpath='{.spec.position}'=down "switch/$first" "switch/$second" \
  --timeout=30s
run kubectl wait --for=jsonpath='{.status.positions}'=ddd machine/machine-2 --timeout=20s
stop_watch

say "Scale it to five switches, then down to two (the newest go)."
run kubectl patch machine machine-2 --type=merge -p '{"spec":{"switches":5}}'
run kubectl wait --for=jsonpath='{.status.positions}'=ddddd machine/machine-2 --timeout=20s
run kubectl patch machine machine-2 --type=merge -p '{"spec":{"switches":2}}'
run kubectl wait --for=jsonpath='{.status.positions}'=dd machine/machine-2 --timeout=20s
run kubectl get switches -l machine=machine-2

say "Turn a switch of machine-2 up, and move it to machine-1 by changing its label."
moved=$(kubectl get switches -l machine=machine-2 -o jsonpath='{.items[0].metadata.name}')
own=$(kubectl get switches -l machine=machine-1 -o jsonpath='{.items[0].metadata.name}')
run kubectl patch switch "$moved" --type=merge -p "$up"
run kubectl wait --for=jsonpath='{.status.seenAt}' "switch/$moved" --timeout=20s
run kubectl label switch "$moved" machine=machine-1 --overwrite

say "machine-1 adopts it and drops its own switch to keep one; machine-2 makes a new one."
run kubectl wait --for=jsonpath='{.metadata.ownerReferences[0].name}'=machine-1 \
  "switch/$moved" --timeout=20s
run kubectl wait --for=delete "switch/$own" --timeout=20s
run kubectl wait --for=jsonpath='{.status.positions}'=dd machine/machine-2 --timeout=20s
run kubectl get machines
run kubectl get switches

say "Its new machine turns the moved switch down, 5 seconds after it was first seen up."
run kubectl wait --for=jsonpath='{.spec.position}'=down "switch/$moved" --timeout=20s
run kubectl wait --for=jsonpath='{.status.positions}'=d machine/machine-1 --timeout=20s
run kubectl get switch "$moved"

say "A machine has 1 to 16 switches: the API server refuses 17, naming the field."
if run kubectl apply -f - <<YAML
apiVersion: useless.container.training/v1alpha1
kind: Machine
metadata:
  name: machine-3
spec:
  switches: 17
YAML
then
  echo "17 switches were accepted" >&2
  exit 1
fi

say "Deleting a machine deletes its switches (they are owned by it: garbage collection)."
mapfile -t gone < <(kubectl get switches -l machine=machine-2 -o name)
run kubectl delete machine machine-2
run kubectl wait --for=delete "${gone[@]}" --timeout=30s
run kubectl get machines,switches
