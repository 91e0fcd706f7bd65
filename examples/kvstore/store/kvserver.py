"""kvstore: the key-value store the kvstore operator runs, one member per pod.

    kvstore serve                 serve the member's keys over HTTP until stopped
    kvstore put KEY VALUE         write a key
    kvstore get KEY               print a key's value (exit status 1 when it is missing)
    kvstore delete KEY            remove a key
    kvstore keys                  list the keys, one a line
    kvstore backup --to DIR       copy every key into DIR/<name>/ and say how many

Each key is a file of the member's data directory (`--data-dir`, else $KVSTORE_DATA_DIR,
else /var/lib/kvstore): the volume of the member's PersistentVolumeClaim, so its keys outlive
the process, the pod and the node it ran on. The first `serve` on a volume records the
member's name ($KVSTORE_MEMBER, else $HOSTNAME) in it; a later member of another name is
refused, so a volume that was attached to the wrong member is noticed before any data is
served from it.

HTTP (`serve`, on --listen [HOST]:PORT, else $KVSTORE_LISTEN, else :7379): GET /healthz,
GET /v1/keys, GET/PUT/DELETE /v1/keys/<key>.

The program uses the standard library only, so its image needs nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType

DEFAULT_DATA_DIR = "/var/lib/kvstore"
DEFAULT_PORT = 7379
# Keys are file names: no separators, no leading dot, bounded length.
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_VALUE = 1 << 20


class StoreError(Exception):
    """A request the store refuses; the message says why."""


class Store:
    """The keys of one member, as files under `<data dir>/keys`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.keys_dir = data_dir / "keys"

    def _path(self, key: str) -> Path:
        if not KEY.fullmatch(key):
            raise StoreError(f"invalid key {key!r}: letters, digits, '.', '_' and '-' only")
        return self.keys_dir / key

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: str, value: bytes) -> None:
        """Write the value durably: a new file synced and renamed over the old one."""
        if len(value) > MAX_VALUE:
            raise StoreError(f"value of {len(value)} bytes: at most {MAX_VALUE}")
        target = self._path(key)
        self.keys_dir.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.keys_dir, prefix=".put-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(value)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def delete(self, key: str) -> bool:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True

    def names(self) -> list[str]:
        if not self.keys_dir.is_dir():
            return []
        return sorted(p.name for p in self.keys_dir.iterdir() if KEY.fullmatch(p.name))

    def claim(self, member: str) -> None:
        """Record which member this volume belongs to, or refuse another member's volume."""
        marker = self.data_dir / "member"
        try:
            owner = marker.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            marker.write_text(member + "\n", encoding="utf-8")
            return
        if owner != member:
            raise StoreError(
                f"the volume at {self.data_dir} belongs to member {owner}, not {member}"
            )

    def backup(self, target: Path) -> int:
        """Copy every key into `target` (made anew); the number of keys copied."""
        target.mkdir(parents=True, exist_ok=False)
        keys = self.names()
        for key in keys:
            shutil.copy2(self.keys_dir / key, target / key)
        return len(keys)


def _handler(store: Store) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "kvstore/0.1"

        def _reply(self, status: HTTPStatus, body: bytes = b"", kind: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _key(self) -> str | None:
            prefix = "/v1/keys/"
            return self.path[len(prefix) :] if self.path.startswith(prefix) else None

        def do_GET(self) -> None:
            if self.path == "/healthz":
                self._reply(HTTPStatus.OK, b"ok\n")
            elif self.path == "/v1/keys":
                self._reply(HTTPStatus.OK, json.dumps(store.names()).encode(), "application/json")
            elif (key := self._key()) is not None:
                self._answer(partial(store.get, key))
            else:
                self._reply(HTTPStatus.NOT_FOUND, b"not found\n")

        def do_PUT(self) -> None:
            key = self._key()
            length = int(self.headers.get("Content-Length") or 0)
            if key is None or length > MAX_VALUE:
                self._reply(HTTPStatus.BAD_REQUEST, b"PUT /v1/keys/<key> with a value\n")
                return
            value = self.rfile.read(length)
            self._answer(partial(store.put, key, value))

        def do_DELETE(self) -> None:
            key = self._key()
            if key is None:
                self._reply(HTTPStatus.NOT_FOUND, b"not found\n")
                return
            self._answer(partial(store.delete, key))

        def _answer(self, action: Callable[[], bytes | bool | None]) -> None:
            try:
                result = action()
            except StoreError as exc:
                self._reply(HTTPStatus.BAD_REQUEST, f"{exc}\n".encode())
                return
            if isinstance(result, bytes):
                self._reply(HTTPStatus.OK, result)
            elif self.command == "GET" or result is False:
                self._reply(HTTPStatus.NOT_FOUND, b"no such key\n")
            else:
                self._reply(HTTPStatus.NO_CONTENT)

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            # Every request but the kubelet's probes, which come every few seconds.
            if self.path != "/healthz":
                sys.stderr.write(f"{self.command} {self.path} {code}\n")

    return Handler


def serve(store: Store, member: str, listen: str) -> int:
    store.claim(member)
    host, _, port = listen.rpartition(":")
    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), _handler(store))

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"member {member}: serving {len(store.names())} keys from {store.data_dir} on {listen}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(f"member {member}: stopping")
    finally:
        server.server_close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kvstore", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("KVSTORE_DATA_DIR") or DEFAULT_DATA_DIR),
        help="the member's data directory (its volume)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serving = commands.add_parser("serve", help="serve the keys over HTTP")
    serving.add_argument(
        "--listen",
        default=os.environ.get("KVSTORE_LISTEN") or f":{DEFAULT_PORT}",
        help="[HOST]:PORT to serve on (all addresses without a host)",
    )
    commands.add_parser("keys", help="list the keys")
    for name in ("get", "delete"):
        commands.add_parser(name, help=f"{name} a key").add_argument("key")
    put = commands.add_parser("put", help="write a key")
    put.add_argument("key")
    put.add_argument("value")
    backup = commands.add_parser("backup", help="copy every key into a new directory")
    backup.add_argument("--to", type=Path, required=True, help="where backups are kept")
    backup.add_argument(
        "--name",
        default=os.environ.get("KVSTORE_BACKUP_NAME") or os.environ.get("HOSTNAME") or "backup",
        help="the backup's directory under --to",
    )
    args = parser.parse_args(argv)
    store = Store(args.data_dir)
    member = os.environ.get("KVSTORE_MEMBER") or os.environ.get("HOSTNAME") or "member"
    try:
        if args.command == "serve":
            return serve(store, member, args.listen)
        if args.command == "put":
            store.put(args.key, args.value.encode())
        elif args.command == "get":
            value = store.get(args.key)
            if value is None:
                print(f"no key {args.key!r}", file=sys.stderr)
                return 1
            sys.stdout.write(value.decode(errors="replace") + "\n")
        elif args.command == "delete":
            if not store.delete(args.key):
                print(f"no key {args.key!r}", file=sys.stderr)
                return 1
        elif args.command == "keys":
            for key in store.names():
                print(key)
        elif args.command == "backup":
            count = store.backup(args.to / args.name)
            kept = sum(1 for p in args.to.iterdir() if p.is_dir())
            print(
                f"backup {args.name}: {count} keys of member {member} to "
                f"{args.to / args.name} ({kept} backups kept)"
            )
    except (StoreError, OSError) as exc:
        print(f"kvstore: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
