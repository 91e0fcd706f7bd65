"""Convergence: a reconcile that writes the time it ran changes the widget every time it is
reconciled, even when nothing else changed (a resync, a restart), so the operator never
settles."""
