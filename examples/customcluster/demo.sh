#!/usr/bin/env bash
# The customcluster scenario: a Customcluster keeps `count` pods echoing its message; it
# scales, replaces every pod when the message changes, removes pods labelled for it that it
# does not own, replaces a deleted pod, and its pods go with it.
#
# `make demo` (or `kubeforge demo customcluster`) plays it on a development cluster with the
# controller running. On another cluster: install the CRD and run the controller first
# (`kubeforge install --dir examples/customcluster`, `kubeforge run --dir examples/customcluster`).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

first="hello from customcluster"
second="goodbye from customcluster"
# Pods are named <customcluster>-<first 8 hex digits of sha256(message)>-<index>.
digest() { printf '%s' "$1" | sha256sum | cut -c1-8; }
old=hello-$(digest "$first")
new=hello-$(digest "$second")

say "The Customcluster kind is installed; kubectl knows its columns."
run kubectl get crd customclusters.samplecontroller.kubeforge.dev

say "Ask for three pods that say '${first}'."
run kubectl apply -f - <<YAML
apiVersion: samplecontroller.kubeforge.dev/v1alpha1
kind: Customcluster
metadata:
  name: hello
spec:
  count: 3
  message: ${first}
YAML
watch_in_background kubectl get customclusters --watch
run kubectl wait --for=jsonpath='{.status.running}'=3 customcluster/hello --timeout=30s >/dev/null
stop_watch
run kubectl get pods -l controller=hello
run kubectl logs "${old}-0"

say "Scale up to five, then down to two: the pods with the highest indexes go."
run kubectl patch customcluster hello --type=merge -p '{"spec":{"count":5}}'
run kubectl wait --for=jsonpath='{.status.running}'=5 customcluster/hello --timeout=30s
run kubectl patch customcluster hello --type=merge -p '{"spec":{"count":2}}'
run kubectl wait --for=delete "pod/${old}-2" "pod/${old}-3" "pod/${old}-4" --timeout=30s
run kubectl get customclusters

say "A new message replaces every pod."
run kubectl patch customcluster hello --type=merge -p "{\"spec\":{\"message\":\"${second}\"}}"
run kubectl wait --for=delete "pod/${old}-0" "pod/${old}-1" --timeout=30s
run kubectl wait --for=jsonpath='{.status.running}'=2 customcluster/hello --timeout=30s
run kubectl get customclusters
run kubectl get pods -l controller=hello
run kubectl logs "${new}-0"

say "A pod labelled controller=hello that the Customcluster does not own is deleted."
run kubectl run stray --image=busybox --labels=controller=hello --command -- sleep 3600
run kubectl wait --for=delete pod/stray --timeout=30s
run kubectl get events --field-selector involvedObject.kind=Customcluster

say "A deleted pod is replaced (same name, new UID)."
before=$(kubectl get pod "${new}-0" -o jsonpath='{.metadata.uid}')
run kubectl delete pod "${new}-0" --wait=false
wait_replaced "pod/${new}-0" "${before}"
run kubectl wait --for=condition=Ready "pod/${new}-0" --timeout=30s
after=$(kubectl get pod "${new}-0" -o jsonpath='{.metadata.uid}')
echo "uid before: ${before}"
echo "uid after:  ${after}"
[ "${before}" != "${after}" ]

say "The CRD's schema rejects a negative count and a missing message, naming the field."
if run kubectl apply -f - <<YAML
apiVersion: samplecontroller.kubeforge.dev/v1alpha1
kind: Customcluster
metadata:
  name: bad
spec:
  count: -1
  message: never
YAML
then
  echo "a negative count was accepted" >&2
  exit 1
fi
if run kubectl apply -f - <<YAML
apiVersion: samplecontroller.kubeforge.dev/v1alpha1
kind: Customcluster
metadata:
  name: bad
spec:
  count: 1
YAML
then
  echo "a Customcluster without a message was accepted" >&2
  exit 1
fi

say "Deleting the Customcluster deletes its pods too (garbage collection)."
run kubectl delete customcluster hello
run kubectl wait --for=delete pod -l controller=hello --timeout=30s
run kubectl get pods -l controller=hello
