"""Table responses for `kubectl get`: the built-in kinds' printers (`printers.py`, one
module per API group beside it: `core.py`, `workloads.py`, `networking.py`, `storage.py`,
`controlplane.py`, on `columns.py`), a CRD's additionalPrinterColumns, and the default pair
for everything else (`tables.py`).

May import the stages below it: storage, types, webhookclient, request, http.
"""
