"""The console: a live web view of a cluster and of every reconcile on a timeline.

`kubeforge dev` and `kubeforge run` serve it on loopback (server.py) behind the cluster's
authentication (auth.py); the objects come from the cluster's watch (mirror.py, objects.py),
the reconciles from the runtime's observers (kubeforge._runtime.timeline). The page is plain
ES modules and CSS shipped in static/. report.py writes one timeline as a self-contained
HTML file (what a failing test leaves next to its report).
"""
