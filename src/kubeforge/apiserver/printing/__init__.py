"""Table responses for `kubectl get`: the built-in printers' columns (`printers.py`), a
CRD's additionalPrinterColumns, and the default pair for everything else (`tables.py`).

May import the stages below it: storage, types, webhookclient, request, http.
"""
