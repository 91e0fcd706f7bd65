#!/usr/bin/env bash
# The kvstore scenario: a KVStore becomes a StatefulSet of store members, each with a volume of
# its own, behind a headless Service, with a disruption budget that keeps a quorum up and a
# backup CronJob. Members join and leave in ordinal order; a drain evicts one member and the
# budget refuses the next; a member whose node goes NotReady starts elsewhere with its data.
#
# `make demo EXAMPLE=kvstore` (or `kubeforge demo kvstore`) plays it on a development cluster
# of three nodes where the store's image runs from store/ ([tool.kubeforge.demo] in
# pyproject.toml). On another cluster: `kubeforge dev --nodes 3 --image kvstore:0.1=store`,
# install the CRD and run the controller first (`make install`, `make run`).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

selector=app.kubernetes.io/name=kvstore,app.kubernetes.io/instance=kv
node_of() { kubectl get pod "$1" -o jsonpath='{.spec.nodeName}'; }
members() {
  kubectl get pods -l "$1" \
    -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase,READY:.status.conditions[?\(@.type==\"Ready\"\)].status
}

say "The KVStore kind is installed, with a scale subresource; the cluster has three nodes."
run kubectl get crd kvstores.store.kubeforge.dev
run kubectl get nodes

say "Ask for a store of three members, backed up every night."
run kubectl apply -f - <<YAML
apiVersion: store.kubeforge.dev/v1alpha1
kind: KVStore
metadata:
  name: kv
spec:
  replicas: 3
  storage: 1Gi
  backup:
    schedule: "0 3 * * *"
YAML
run kubectl wait --for=condition=Ready kvstore/kv --timeout=60s
run kubectl get kvstores

say "What the controller made: a StatefulSet, a headless and a client Service, a budget, a CronJob."
run kubectl get statefulset,service,poddisruptionbudget,cronjob -l "$selector"
say "Each member has its own claim, data-kv-<ordinal>, bound by the default class."
run kubectl get pvc -l "$selector"
run kubectl get kvstore kv -o jsonpath='{range .status.members[*]}{.name}{" on "}{.node}{" ready="}{.ready}{"\n"}{end}'

say "Write keys into the members: each keeps them in its volume."
run kubectl exec kv-0 -- kvstore put greeting hello
run kubectl exec kv-0 -- kvstore put colour blue
run kubectl exec kv-0 -- kvstore keys

say "Delete kv-0: the StatefulSet makes it again under its name, on its claim, keys and all."
before=$(kubectl get pod kv-0 -o jsonpath='{.metadata.uid}')
run kubectl delete pod kv-0 --wait=false
wait_replaced pod/kv-0 "${before}" 60
run kubectl wait --for=condition=Ready pod/kv-0 --timeout=60s
run kubectl exec kv-0 -- kvstore get greeting

say "Scale up through the scale subresource: kv-3 joins, then kv-4, each once the one before is ready."
run kubectl scale kvstore/kv --replicas=5
run kubectl wait --for=jsonpath='{.status.readyReplicas}'=5 kvstore/kv --timeout=60s
run members "$selector"

say "Going from five members to two at once would leave no majority of the five: refused."
if run kubectl scale kvstore/kv --replicas=2; then
  echo "a scale-down that loses the quorum was accepted" >&2
  exit 1
fi
say "One step at a time works: back to three (the highest ordinals leave first, their claims stay)."
run kubectl scale kvstore/kv --replicas=3
run kubectl wait --for=jsonpath='{.status.replicas}'=3 kvstore/kv --timeout=60s
run kubectl wait --for=condition=Ready kvstore/kv --timeout=60s
run kubectl get kvstores

say "Drain the node of kv-0. The budget (minAvailable 2 of 3) lets one member go."
drained=$(node_of kv-0)
run kubectl get pdb kv
run kubectl drain "$drained" --ignore-daemonsets --delete-emptydir-data --pod-selector="$selector" --timeout=60s
say "kv-0 is made again, but its volume lives on the drained node: it waits for it."
run kubectl wait --for=jsonpath='{.status.currentHealthy}'=2 pdb/kv --timeout=30s
run members "$selector"
run kubectl get pdb kv
say "While kv-0 is down, evicting another member would break the quorum: 429, as a drain sees it."
if run kubectl create --raw "/api/v1/namespaces/default/pods/kv-1/eviction" -f - <<JSON
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "kv-1", "namespace": "default"}}
JSON
then
  echo "an eviction that breaks the budget was allowed" >&2
  exit 1
fi
run kubectl get kvstores
say "Uncordon the node: kv-0 comes back to its volume, with its keys."
run kubectl uncordon "$drained"
run kubectl wait --for=condition=Ready kvstore/kv --timeout=60s
run kubectl exec kv-0 -- kvstore get colour

say "Back the store up now, as the schedule would: a Job from the CronJob."
run kubectl create job backup-now --from=cronjob/kv-backup
run kubectl wait --for=condition=Complete job/backup-now --timeout=60s
run kubectl logs job/backup-now

say "Failover: a second store on storage every node reaches, whose members leave a failed node after 2 s."
run kubectl apply -f - <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: shared
provisioner: rancher.io/local-path
volumeBindingMode: Immediate
---
apiVersion: store.kubeforge.dev/v1alpha1
kind: KVStore
metadata:
  name: ha
spec:
  replicas: 3
  storageClassName: shared
  failoverSeconds: 2
YAML
run kubectl wait --for=condition=Ready kvstore/ha --timeout=60s
run kubectl exec ha-1 -- kvstore put greeting "hello from ha-1"
failed=$(node_of ha-1)
say "Take ha-1's node down: its kubelet reports NotReady."
run kubectl annotate node "$failed" kubeforge.dev/node-health=not-ready
run kubectl wait --for=condition=Ready=false "node/$failed" --timeout=30s
run kubectl get nodes
say "Two seconds later ha-1 is evicted and starts on a node that is ready, with its volume."
run kubectl wait --for=delete pod/ha-1 --timeout=30s
run kubectl wait --for=condition=Ready pod/ha-1 --timeout=60s
run members app.kubernetes.io/instance=ha
run kubectl exec ha-1 -- kvstore get greeting
say "Bring the node back."
run kubectl annotate node "$failed" kubeforge.dev/node-health-
run kubectl wait --for=condition=Ready "node/$failed" --timeout=30s

say "Deleting a KVStore deletes what it made; the members' claims stay, as a StatefulSet's do."
run kubectl delete kvstore kv ha --wait=true
run kubectl wait --for=delete statefulset/kv statefulset/ha --timeout=30s
run kubectl get pvc
