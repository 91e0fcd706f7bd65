#!/usr/bin/env python3
"""Generate `src/kubeforge/_apiserver/request/data/proto_messages.json`, the protobuf field tables.

The embedded API server decodes Kubernetes protobuf request bodies generically: for every
message it needs, per field number, the JSON name, the field type, whether it repeats or is a
map, and whether a zero value survives into JSON. This script produces those tables from two
upstream sources, either or both:

``--proto-dir DIR``
    A tree holding Kubernetes ``generated.proto`` files (``kubernetes/api``
    ``<group>/<version>/generated.proto``, ``kubernetes/apimachinery``
    ``pkg/apis/meta/v1``, ``pkg/api/resource``, ``pkg/util/intstr``, ``pkg/runtime``,
    ``kubernetes/apiextensions-apiserver`` ``pkg/apis/apiextensions/v1``). Each file's
    ``package`` line names its messages; paths do not matter. Keep these files outside the
    repository.

``--go-binary FILE``
    A Go executable built against ``k8s.io/api`` (kubectl is one). Go keeps, for every struct
    type reachable by reflection, its fields with their types and struct tags, and the
    Kubernetes API structs carry ``json:"..."`` and ``protobuf:"wire,number,opt|rep,name=..."``
    tags. That gives the same field numbers as the ``.proto`` files plus what the ``.proto``
    files cannot say: whether a field is a Go pointer and whether its JSON tag has
    ``omitempty``, which decides whether a zero value is kept (``replicas: 0``) or dropped
    (``paused: false``). kubectl 1.33.1 carries k8s.io/api v0.33.1.

When both describe a message, field types come from whichever has the field, Go decides JSON
names and zero handling, and the ``.proto`` adds fields the binary does not know. Messages known
only from ``.proto`` files take zero handling and JSON names from ``PROTO_ONLY_FIELDS`` below
(apiextensions v1, whose types kubectl does not link).

Data file layout::

    {"source": "...",
     "groups": {"apps/v1": "k8s.io.api.apps.v1", "v1": "k8s.io.api.core.v1", ...},
     "lists": ["<message>", ...],          # wrappers of a Go named slice: JSON is the items array
     "messages": {"<package>.<Message>": [[number, json, type, label, keep, key?], ...]}}

``type`` is a protobuf scalar type name or a full message name; ``label`` is 0 (single),
1 (repeated) or 2 (map, ``key`` is the key type); ``json`` is "" for a Go struct inlined into
its parent (``json:",inline"``); ``keep`` is 1 when a zero scalar must stay in the JSON.

Typical run (kubectl.1.33 lives next to kubectl)::

    KUBECTL_DIR="$(dirname "$(readlink -f "$(which kubectl)")")"
    python tools/gen_proto_tables.py --go-binary "$KUBECTL_DIR/kubectl.1.33" \\
        --proto-dir /tmp/k8sproto -o src/kubeforge/_apiserver/request/data/proto_messages.json
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

# Go package (as the protobuf package spells it) of each Kubernetes API group.
GROUP_NAMES = {
    "core": "",
    "admission": "admission.k8s.io",
    "admissionregistration": "admissionregistration.k8s.io",
    "apidiscovery": "apidiscovery.k8s.io",
    "apiserverinternal": "internal.apiserver.k8s.io",
    "apps": "apps",
    "authentication": "authentication.k8s.io",
    "authorization": "authorization.k8s.io",
    "autoscaling": "autoscaling",
    "batch": "batch",
    "certificates": "certificates.k8s.io",
    "coordination": "coordination.k8s.io",
    "discovery": "discovery.k8s.io",
    "events": "events.k8s.io",
    "extensions": "extensions",
    "flowcontrol": "flowcontrol.apiserver.k8s.io",
    "imagepolicy": "imagepolicy.k8s.io",
    "networking": "networking.k8s.io",
    "node": "node.k8s.io",
    "policy": "policy",
    "rbac": "rbac.authorization.k8s.io",
    "resource": "resource.k8s.io",
    "scheduling": "scheduling.k8s.io",
    "storage": "storage.k8s.io",
    "storagemigration": "storagemigration.k8s.io",
}
META_PACKAGE = "k8s.io.apimachinery.pkg.apis.meta.v1"
APIEXT_PACKAGE = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
# Go packages whose structs become messages.
GO_PACKAGE_PREFIXES = ("k8s.io/api/",)
GO_PACKAGES = {
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apimachinery/pkg/runtime",
    "k8s.io/apimachinery/pkg/runtime/schema",
}

# apiextensions.k8s.io/v1 from its Go types (types.go, types_jsonschema.go): per message, the
# JSON name where it differs from the protobuf name, and the fields whose zero value JSON keeps
# (Go pointers and fields without omitempty).
PROTO_ONLY_FIELDS: dict[str, tuple[dict[str, str], set[str]]] = {
    f"{APIEXT_PACKAGE}.CustomResourceColumnDefinition": ({}, {"name", "type", "jsonPath"}),
    f"{APIEXT_PACKAGE}.CustomResourceConversion": ({}, {"strategy"}),
    f"{APIEXT_PACKAGE}.CustomResourceDefinitionSpec": ({}, {"group", "scope"}),
    f"{APIEXT_PACKAGE}.CustomResourceDefinitionVersion": (
        {},
        {"name", "served", "storage", "deprecationWarning"},
    ),
    f"{APIEXT_PACKAGE}.CustomResourceDefinitionNames": ({}, {"plural", "kind"}),
    f"{APIEXT_PACKAGE}.CustomResourceDefinitionCondition": ({}, {"type", "status"}),
    f"{APIEXT_PACKAGE}.CustomResourceSubresourceScale": (
        {},
        {"specReplicasPath", "statusReplicasPath", "labelSelectorPath"},
    ),
    f"{APIEXT_PACKAGE}.SelectableField": ({}, {"jsonPath"}),
    f"{APIEXT_PACKAGE}.ServiceReference": ({}, {"namespace", "name", "path", "port"}),
    f"{APIEXT_PACKAGE}.WebhookClientConfig": ({}, {"url"}),
    f"{APIEXT_PACKAGE}.ValidationRule": ({}, {"rule", "reason", "optionalOldSelf"}),
    f"{APIEXT_PACKAGE}.ConversionRequest": ({}, {"uid", "desiredAPIVersion"}),
    f"{APIEXT_PACKAGE}.ConversionResponse": ({}, {"uid"}),
    f"{APIEXT_PACKAGE}.JSONSchemaProps": (
        {
            "schema": "$schema",
            "ref": "$ref",
            "xKubernetesPreserveUnknownFields": "x-kubernetes-preserve-unknown-fields",
            "xKubernetesEmbeddedResource": "x-kubernetes-embedded-resource",
            "xKubernetesIntOrString": "x-kubernetes-int-or-string",
            "xKubernetesListMapKeys": "x-kubernetes-list-map-keys",
            "xKubernetesListType": "x-kubernetes-list-type",
            "xKubernetesMapType": "x-kubernetes-map-type",
            "xKubernetesValidations": "x-kubernetes-validations",
        },
        {
            "maximum",
            "minimum",
            "maxLength",
            "minLength",
            "maxItems",
            "minItems",
            "multipleOf",
            "maxProperties",
            "minProperties",
            "xKubernetesPreserveUnknownFields",
            "xKubernetesListType",
            "xKubernetesMapType",
        },
    ),
}

SCALARS = {
    "double",
    "float",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "sint32",
    "sint64",
    "fixed32",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "bool",
    "string",
    "bytes",
}

# Scalars whose zero value can be meaningful in JSON (an empty []byte travels as null).
_KEEPABLE = SCALARS - {"bytes"}


@dataclass
class Field:
    number: int
    json: str
    type: str
    label: int  # 0 single, 1 repeated, 2 map
    keep: bool
    key: str = ""
    proto_name: str = ""

    def row(self) -> list[object]:
        row: list[object] = [self.number, self.json, self.type, self.label, int(self.keep)]
        if self.label == 2:
            row.append(self.key)
        return row


Messages = dict[str, dict[int, Field]]


# .proto text ----------------------------------------------------------------------------------

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FIELD = re.compile(
    r"(optional|repeated|required)?\s*"
    r"(?:map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>|([\w.]+))\s+(\w+)\s*=\s*(\d+)\s*[;\[]"
)


_BRACE = re.compile(r"[{}]")


def parse_proto(text: str, messages: Messages) -> None:
    """Add the messages of one ``generated.proto`` text."""
    text = _COMMENTS.sub("", text)
    pkg_match = re.search(r"\bpackage\s+([\w.]+)\s*;", text)
    if pkg_match is None:
        raise ValueError("no package statement")
    package = pkg_match.group(1)
    for m in re.finditer(r"\bmessage\s+(\w+)\s*\{", text):
        depth, pos = 1, m.end()
        while depth:
            ch = _BRACE.search(text, pos)
            if ch is None:
                raise ValueError(f"unterminated message {m.group(1)}")
            depth += 1 if ch.group() == "{" else -1
            pos = ch.end()
        body = text[m.end() : pos - 1]
        fields: dict[int, Field] = {}
        for f in _FIELD.finditer(body):
            label_word, key, value, single, name, number = f.groups()
            if key:
                label, ftype = 2, _resolve(value, package)
                key = _resolve(key, package)
            else:
                label = 1 if label_word == "repeated" else 0
                ftype = _resolve(single, package)
            fields[int(number)] = Field(int(number), name, ftype, label, False, key or "", name)
        messages[f"{package}.{m.group(1)}"] = fields


def _resolve(name: str, package: str) -> str:
    if name in SCALARS:
        return name
    if "." in name:
        return name.lstrip(".")
    return f"{package}.{name}"


def load_protos(root: Path) -> Messages:
    messages: Messages = {}
    for path in sorted(root.rglob("*.proto")):
        parse_proto(path.read_text(encoding="utf-8"), messages)
    return messages


# Go reflection data ---------------------------------------------------------------------------
# Layouts of Go 1.2x runtime type descriptors on 64-bit little-endian targets (internal/abi):
# Type is 48 bytes (kind byte at 23, tflag at 20, name offset at 40); PtrType and SliceType add
# Elem at 48; map types add Key at 48 and Elem at 56; StructType adds PkgPath at 48 and the
# field slice at 56, followed by UncommonType (package path offset first) when tflag has bit 0.
# A StructField is {name *byte, typ *Type, offset uintptr}. A name is a flags byte, a varint
# length, the bytes, and when flags bit 1 is set a varint tag length and the tag.

_KIND_BOOL, _KIND_INT, _KIND_INT32, _KIND_INT64 = 1, 2, 5, 6
_KIND_UINT8, _KIND_UINT32, _KIND_UINT64, _KIND_FLOAT64 = 8, 10, 11, 14
_KIND_MAP, _KIND_PTR, _KIND_SLICE, _KIND_STRING, _KIND_STRUCT = 21, 22, 23, 24, 25
_GO_SCALARS = {
    _KIND_BOOL: "bool",
    _KIND_INT: "int64",
    _KIND_INT32: "int32",
    _KIND_INT64: "int64",
    _KIND_UINT32: "uint32",
    _KIND_UINT64: "uint64",
    _KIND_FLOAT64: "double",
    _KIND_STRING: "string",
}
# `protobuf:"bytes,2,opt,name=spec"`; the opt/rep/req part is absent on some fields.
_PROTOBUF_TAG = re.compile(r'protobuf:"(\w+),(\d+),(?:(opt|rep|req),)?name=(\w+)')


class GoBinary:
    """Reads struct types with their fields and tags from a statically linked ELF Go binary."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        if self.data[:4] != b"\x7fELF" or self.data[4] != 2:
            raise ValueError(f"{path}: not a 64-bit ELF file")
        self.segments = list(self._segments())
        self.types_base = self._section_address(".rodata")

    def _segments(self) -> Iterator[tuple[int, int, int]]:
        phoff = struct.unpack_from("<Q", self.data, 0x20)[0]
        entsize, count = struct.unpack_from("<HH", self.data, 0x36)
        for i in range(count):
            p_type, _, offset, vaddr, _, filesz = struct.unpack_from(
                "<IIQQQQ", self.data, phoff + i * entsize
            )
            if p_type == 1:  # PT_LOAD
                yield vaddr, offset, filesz

    def _section_address(self, wanted: str) -> int:
        shoff = struct.unpack_from("<Q", self.data, 0x28)[0]
        entsize, count, strndx = struct.unpack_from("<HHH", self.data, 0x3A)
        names_off = struct.unpack_from("<Q", self.data, shoff + strndx * entsize + 0x18)[0]
        for i in range(count):
            base = shoff + i * entsize
            name_idx = struct.unpack_from("<I", self.data, base)[0]
            end = self.data.index(b"\0", names_off + name_idx)
            if self.data[names_off + name_idx : end].decode() == wanted:
                return int(struct.unpack_from("<Q", self.data, base + 0x10)[0])
        raise ValueError(f"no {wanted} section")

    def offset(self, address: int) -> int:
        for vaddr, off, size in self.segments:
            if vaddr <= address < vaddr + size:
                return off + address - vaddr
        raise ValueError(f"address {address:#x} outside the file")

    def address(self, offset: int) -> int:
        for vaddr, off, size in self.segments:
            if off <= offset < off + size:
                return vaddr + offset - off
        raise ValueError(f"offset {offset:#x} outside loaded segments")

    def _varint(self, pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = self.data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value, pos

    def name(self, address: int) -> tuple[str, str]:
        """(name, tag) of the name record at `address`."""
        pos = self.offset(address)
        flags = self.data[pos]
        length, pos = self._varint(pos + 1)
        text = self.data[pos : pos + length].decode()
        tag = ""
        if flags & 2:
            tag_len, pos = self._varint(pos + length)
            tag = self.data[pos : pos + tag_len].decode()
        return text, tag

    def type_info(self, address: int) -> tuple[int, str, str]:
        """(kind, name as Go prints it, package path or "") of a type descriptor."""
        pos = self.offset(address)
        tflag, kind = self.data[pos + 20], self.data[pos + 23] & 0x1F
        name, _ = self.name(self.types_base + struct.unpack_from("<i", self.data, pos + 40)[0])
        if tflag & 2:
            name = name[1:]
        pkg = ""
        if tflag & 1 and tflag & 4:
            extra = {_KIND_STRUCT: 80, _KIND_PTR: 56, _KIND_SLICE: 56}.get(kind)
            if extra is not None:
                off = struct.unpack_from("<i", self.data, pos + extra)[0]
                pkg = self.name(self.types_base + off)[0]
        return kind, name, pkg

    def elem(self, address: int, at: int = 48) -> int:
        return int(struct.unpack_from("<Q", self.data, self.offset(address) + at)[0])

    def tagged_names(self) -> set[int]:
        """Addresses of name records whose tag holds a json or protobuf key."""
        found: set[int] = set()
        data = self.data
        for m in re.finditer(rb'(?:json|protobuf):"', data):
            start = m.start()
            for tl_size in (1, 2):
                p = start - tl_size
                if tl_size == 1 and data[p] >= 0x80:
                    continue
                if tl_size == 2 and (not data[p] & 0x80 or data[p + 1] & 0x80):
                    continue
                for length in range(1, 100):
                    q = p - length
                    flags = data[q - 2]
                    if (
                        data[q - 1] == length
                        and flags & 2
                        and flags < 16
                        and re.fullmatch(rb"[A-Za-z_]\w*", data[q:p])
                    ):
                        found.add(self.address(q - 2))
                        break
                else:
                    continue
                break
        return found

    def structs(self) -> dict[tuple[str, str], list[tuple[str, str, int]]]:
        """(package path, type name) -> [(field name, tag, field type address)]."""
        names = self.tagged_names()
        data = self.data
        words = memoryview(data)[: len(data) // 8 * 8].cast("Q")
        field_entries = {self.address(i * 8) for i, word in enumerate(words) if word in names}
        result: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
        for i in range(len(words) - 2):
            ptr = words[i]
            if ptr not in field_entries:
                continue
            count = words[i + 1]
            if count != words[i + 2] or not 0 < count < 500:
                continue
            type_off = i * 8 - 56
            if data[type_off + 23] & 0x1F != _KIND_STRUCT:
                continue
            _, type_name, pkg = self.type_info(self.address(type_off))
            fields = []
            base = self.offset(ptr)
            for n in range(count):
                name_addr, type_addr, _ = struct.unpack_from("<QQQ", data, base + 24 * n)
                fname, tag = self.name(name_addr)
                fields.append((fname, tag, type_addr))
            result[(pkg, type_name.split(".", 1)[-1])] = fields
        return result


def _go_package_wanted(pkg: str) -> bool:
    return pkg in GO_PACKAGES or pkg.startswith(GO_PACKAGE_PREFIXES)


def load_go(binary: GoBinary) -> tuple[Messages, set[str]]:
    """Messages described by the API structs of a Go binary, and the list-wrapper messages."""
    messages: Messages = {}
    lists: set[str] = set()

    def message_name(pkg: str, name: str) -> str:
        return pkg.replace("/", ".") + "." + name.split(".", 1)[-1]

    def resolve(address: int) -> tuple[str, int, str, bool]:
        """(type, label, map key type, pointer) for a field's Go type."""
        kind, name, pkg = binary.type_info(address)
        pointer = False
        if kind == _KIND_PTR:
            pointer = True
            address = binary.elem(address)
            kind, name, pkg = binary.type_info(address)
        if kind == _KIND_SLICE:
            elem_addr = binary.elem(address)
            elem_kind, _, _ = binary.type_info(elem_addr)
            if elem_kind == _KIND_UINT8:
                return "bytes", 0, "", pointer
            if pkg:  # a named slice travels as a message wrapping `items`
                wrapper = message_name(pkg, name)
                if wrapper not in messages:
                    item_type, _, _, _ = resolve(elem_addr)
                    messages[wrapper] = {1: Field(1, "items", item_type, 1, False, "", "items")}
                    lists.add(wrapper)
                return wrapper, 0, "", pointer
            return resolve(elem_addr)[0], 1, "", pointer
        if kind == _KIND_MAP:
            key_type = resolve(binary.elem(address, 48))[0]
            value_type = resolve(binary.elem(address, 56))[0]
            return value_type, 2, key_type, pointer
        if kind == _KIND_STRUCT:
            return message_name(pkg, name), 0, "", pointer
        scalar = _GO_SCALARS.get(kind)
        if scalar is None:
            raise ValueError(f"unsupported Go kind {kind} ({name})")
        return scalar, 0, "", pointer

    for (pkg, type_name), go_fields in binary.structs().items():
        if not _go_package_wanted(pkg):
            continue
        fields: dict[int, Field] = {}
        for go_name, tag, type_addr in go_fields:
            pb = _PROTOBUF_TAG.search(tag)
            if pb is None:
                continue
            json_match = re.search(r'json:"([^"]*)"', tag)
            json_parts = (json_match.group(1) if json_match else "").split(",")
            json_name = json_parts[0]
            if json_name == "-":
                continue
            ftype, label, key, pointer = resolve(type_addr)
            if not json_name and (label or ftype in SCALARS):
                json_name = go_name  # encoding/json's default; only structs inline
            if pb.group(3) == "rep" and label == 0 and ftype != "bytes":
                label = 1
            keep = label == 0 and ftype in _KEEPABLE and (pointer or "omitempty" not in json_parts)
            number = int(pb.group(2))
            fields[number] = Field(number, json_name, ftype, label, keep, key, pb.group(4))
        if fields:
            messages[message_name(pkg, type_name)] = fields
    return messages, lists


# merging and output ---------------------------------------------------------------------------


def merge(go: Messages, proto: Messages) -> tuple[Messages, list[str]]:
    """Union of both sources; returns the messages and a list of disagreements found."""
    problems: list[str] = []
    merged: Messages = {name: dict(fields) for name, fields in go.items()}
    for name, proto_fields in proto.items():
        renames, keeps = PROTO_ONLY_FIELDS.get(name, ({}, set()))
        target = merged.setdefault(name, {})
        for number, pf in proto_fields.items():
            existing = target.get(number)
            if existing is None:
                pf.json = renames.get(pf.proto_name, pf.proto_name)
                pf.keep = pf.label == 0 and pf.type in _KEEPABLE and pf.proto_name in keeps
                target[number] = pf
            elif existing.proto_name != pf.proto_name:
                problems.append(f"{name} field {number}: {existing.proto_name} != {pf.proto_name}")
            elif existing.label != pf.label or (
                existing.type != pf.type and existing.type in SCALARS | {"bytes"}
            ):
                problems.append(
                    f"{name}.{pf.proto_name}: go {existing.type}/{existing.label} "
                    f"proto {pf.type}/{pf.label}"
                )
    return merged, problems


def group_versions(messages: Messages) -> dict[str, str]:
    """apiVersion -> protobuf package, for every API group package present."""
    result: dict[str, str] = {}
    for name in messages:
        package = name.rsplit(".", 1)[0]
        m = re.fullmatch(r"k8s\.io\.api\.(\w+)\.(v\w+)", package)
        if m and m.group(1) in GROUP_NAMES:
            group = GROUP_NAMES[m.group(1)]
            result[f"{group}/{m.group(2)}" if group else m.group(2)] = package
        elif package == APIEXT_PACKAGE:
            result["apiextensions.k8s.io/v1"] = package
        elif package == META_PACKAGE:
            result["meta.k8s.io/v1"] = package
    return dict(sorted(result.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proto-dir", type=Path, help="tree of generated.proto files")
    parser.add_argument("--go-binary", type=Path, help="Go executable built with k8s.io/api")
    parser.add_argument("--source", default="", help="provenance note stored in the file")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.proto_dir and not args.go_binary:
        parser.error("give --proto-dir, --go-binary or both")
    go: Messages = {}
    lists: set[str] = set()
    if args.go_binary:
        go, lists = load_go(GoBinary(args.go_binary))
    proto = load_protos(args.proto_dir) if args.proto_dir else {}
    messages, problems = merge(go, proto)
    for problem in problems:
        print("warning:", problem, file=sys.stderr)
    doc = {
        "source": args.source,
        "groups": group_versions(messages),
        "lists": sorted(lists),
        "messages": {
            name: [f.row() for _, f in sorted(fields.items())]
            for name, fields in sorted(messages.items())
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(orjson.dumps(doc) + b"\n")
    print(
        f"{len(doc['messages'])} messages, {len(doc['groups'])} group versions -> {args.output}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
