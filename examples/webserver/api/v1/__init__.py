"""webserver v1."""

from api.v1.webserver import WebServer, WebServerSpec, WebServerStatus

__all__ = ["WebServer", "WebServerSpec", "WebServerStatus"]
