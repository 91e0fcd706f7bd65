#!/usr/bin/env bash
# The webserver scenario: a WebServer becomes a Deployment of nginx pods behind a NodePort
# Service; scaling it and changing its image are one-field edits, and a deleted Service comes
# back on its own.
#
# `make demo` (or `kubeforge demo webserver`) plays it on a development cluster with the
# webserver controller running. On another cluster: install the CRD and run the controller
# first (`kubeforge install --dir examples/webserver`, `kubeforge run --dir examples/webserver`).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

say "The WebServer kind is installed, with a scale subresource."
run kubectl get crd webservers.my.kubeforge.dev

say "Ask for three nginx pods."
run kubectl apply -f - <<YAML
apiVersion: my.kubeforge.dev/v1
kind: WebServer
metadata:
  name: web
spec:
  replicas: 3
  image: nginx:1.27
YAML
run kubectl wait --for=jsonpath='{.status.readyReplicas}'=3 webserver/web --timeout=30s
run kubectl get webservers

say "What the controller made: a Deployment, its pods, and a NodePort Service."
run kubectl get deploy,svc -l app.kubernetes.io/instance=web
run kubectl get pods -l app.kubernetes.io/instance=web

say "Scale through the spec (four pods) ..."
run kubectl patch webserver web --type=merge -p '{"spec":{"replicas":4}}'
run kubectl wait --for=jsonpath='{.status.readyReplicas}'=4 webserver/web --timeout=30s
run kubectl get webservers

say "... or with kubectl scale, through the scale subresource (back to two)."
run kubectl scale webserver/web --replicas=2
run kubectl wait --for=jsonpath='{.status.readyReplicas}'=2 webserver/web --timeout=30s
run kubectl get webservers

say "Upgrade the image: the Deployment rolls the pods over to the new version."
run kubectl patch webserver web --type=merge -p '{"spec":{"image":"nginx:1.28"}}'
run kubectl wait --for=jsonpath='{.spec.template.spec.containers[0].image}'=nginx:1.28 \
  deployment/web --timeout=30s
run kubectl rollout status deployment/web --timeout=60s
run kubectl get pods -l app.kubernetes.io/instance=web \
  -o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,PHASE:.status.phase
run kubectl get webservers

say "Delete the Service by mistake; the controller creates it again."
run kubectl delete service web
run kubectl wait --for=create service/web --timeout=30s
run kubectl get svc web

say "':latest' is refused by a CEL rule in the CRD, with the field path."
if run kubectl patch webserver web --type=merge -p '{"spec":{"image":"nginx:latest"}}'; then
  echo "an unpinned image was accepted" >&2
  exit 1
fi

say "Deleting the WebServer deletes its Deployment, Service and pods (garbage collection)."
run kubectl delete webserver web --wait=true
run kubectl wait --for=delete deployment/web service/web --timeout=30s
run kubectl wait --for=delete pods -l app.kubernetes.io/instance=web --timeout=30s
run kubectl get deploy,svc,pods -l app.kubernetes.io/instance=web
