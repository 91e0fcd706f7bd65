"""The kubeforge release: the one place it is written (the package build reads it too).

Every module below the root package imports it from here, so no lower layer imports the top.
"""

__version__ = "0.1.0"
