#!/usr/bin/env bash
# The watcher scenario: a Watcher's configuration lands in the ConfigMap <name>-config, follows
# every change to the spec, and comes back when someone edits or deletes the ConfigMap; a pod
# that names the Watcher gets its container as a sidecar (a mutating webhook), and Watchers
# whose ConfigMap could not exist are refused (a validating webhook).
#
# `kubeforge demo watcher` plays it on a development cluster with the watcher controller and
# webhooks running. On another cluster: install the CRD and run the controller first
# (`kubeforge install --dir examples/watcher`, `kubeforge run --dir examples/watcher`, which
# also serves the webhooks from this machine and registers them).
set -euo pipefail
cd "$(dirname "$0")"
. ../narrate.sh

say "The Watcher kind is installed."
run kubectl get crd watchers.watch.kubeforge.dev

say "A Watcher: a container (it prints its greeting), text and binary configuration."
run kubectl apply -f - <<'YAML'
apiVersion: watch.kubeforge.dev/v1alpha1
kind: Watcher
metadata:
  name: greeter
spec:
  container:
    name: greeter
    image: busybox:1.36
    command: ["sh", "-c", "echo \"$greeting\"; sleep 3600"]
  configData:
    greeting: hello
    language: en
  configBinaryData:
    logo.bin: AAECAw==
YAML

say "The controller creates greeter-config and names it in the Watcher's status."
run kubectl wait --for=jsonpath='{.status.configMapName}'=greeter-config watcher/greeter --timeout=30s
run kubectl get watchers
run kubectl get configmap greeter-config -o jsonpath='{.data}{"\n"}{.binaryData}{"\n"}'
run kubectl get configmap greeter-config \
  -o jsonpath='owned by {.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name}{"\n"}'

say "Change the spec: one key changed, one added, one removed."
run kubectl patch watcher greeter --type=merge \
  -p '{"spec":{"configData":{"greeting":"bonjour","language":null,"audience":"world"}}}'
run kubectl wait --for=jsonpath='{.data.greeting}'=bonjour configmap/greeter-config --timeout=30s
run kubectl get configmap greeter-config -o jsonpath='{.data}{"\n"}'
# The controller replaces data in one write, so with greeting changed, language is gone too.
test -z "$(kubectl get configmap greeter-config -o jsonpath='{.data.language}')"

say "Someone edits the ConfigMap by hand; the controller puts the spec's value back."
run kubectl patch configmap greeter-config --type=merge -p '{"data":{"greeting":"tampered"}}'
run kubectl wait --for=jsonpath='{.data.greeting}'=bonjour configmap/greeter-config --timeout=30s
run kubectl get configmap greeter-config -o jsonpath='{.data}{"\n"}'

say "Someone deletes the ConfigMap; the controller creates it again."
run kubectl delete configmap greeter-config
run kubectl wait --for=create configmap/greeter-config --timeout=30s
run kubectl wait --for=jsonpath='{.data.greeting}'=bonjour configmap/greeter-config --timeout=30s
run kubectl get configmap greeter-config

# rejected: apply the manifest on stdin, which the API server must refuse.
rejected() {
  if run kubectl apply -f -; then
    echo "something invalid was accepted" >&2
    exit 1
  fi
}

say "A pod names the Watcher in an annotation; the mutating webhook adds the Watcher's container."
run kubectl apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: app
  annotations:
    watch.kubeforge.dev/inject: greeter
spec:
  containers:
  - name: app
    image: nginx:1.27
YAML
run kubectl get pod app \
  -o jsonpath='{range .spec.containers[*]}{.name}: {.image}{" "}{.envFrom}{"\n"}{end}'
test "$(kubectl get pod app -o jsonpath='{.spec.containers[*].name}')" = "app greeter"
say "Both containers run; the sidecar reads its configuration from the environment."
run kubectl wait --for=condition=Ready pod/app --timeout=30s
run kubectl get pod app
run kubectl logs app -c greeter

say "A pod naming a Watcher that does not exist is refused, and says so."
rejected <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: lost
  annotations:
    watch.kubeforge.dev/inject: nobody
spec:
  containers:
  - name: app
    image: nginx:1.27
YAML

say "The validating webhook refuses a key in both configData and configBinaryData."
rejected <<'YAML'
apiVersion: watch.kubeforge.dev/v1alpha1
kind: Watcher
metadata:
  name: clash
spec:
  container:
    name: greeter
    image: busybox:1.36
  configData:
    greeting: hello
  configBinaryData:
    greeting: AAECAw==
YAML

say "A container without an image is rejected, with the field's path."
rejected <<'YAML'
apiVersion: watch.kubeforge.dev/v1alpha1
kind: Watcher
metadata:
  name: broken
spec:
  container:
    name: no-image
YAML

say "So is binary configuration that is not base64."
rejected <<'YAML'
apiVersion: watch.kubeforge.dev/v1alpha1
kind: Watcher
metadata:
  name: broken
spec:
  container:
    name: greeter
    image: busybox:1.36
  configBinaryData:
    logo.bin: "not base64!"
YAML

say "Deleting the Watcher deletes its ConfigMap too (garbage collection)."
run kubectl delete watcher greeter --wait=true
run kubectl wait --for=delete configmap/greeter-config --timeout=30s
