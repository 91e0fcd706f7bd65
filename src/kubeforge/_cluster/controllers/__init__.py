"""The built-in controllers of a development cluster, written with kubeforge._runtime."""
