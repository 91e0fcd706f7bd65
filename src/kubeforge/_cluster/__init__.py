"""Internal: the development cluster behind `kubeforge.cluster` and `kubeforge dev`: the API
server joined with the built-in controllers (`controllers/`, written on the runtime), the
simulated nodes (`kubelet.py`, `podworker.py`), the shell interpreter of simulated
containers (`shell/`), containers as local processes and the cert-manager subset
(`certmanager/`).
"""
