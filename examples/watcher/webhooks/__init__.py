"""The webhooks of watcher: one package per API version (`kubeforge create webhook`)."""
