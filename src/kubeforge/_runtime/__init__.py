"""Internal: the controller runtime. The manager, its cache and the cached client; informers
(`watcher`, `reflector`, `informer`, `store`); the work queue and its rate limiters; handlers,
predicates and sources; controllers and their builder; leader election; metrics, events and
logs; the reconcile contract; object helpers (ownership, finalizers, conditions, upsert); and
the local serving of webhooks. Its public names are exported by `kubeforge` and by the
concept modules (`kubeforge.cache`, `kubeforge.workqueue`, `kubeforge.handler`, ...).
"""
