"""YAML request bodies read the way Kubernetes reads them: converted to JSON values first.

kube-apiserver hands a YAML body to sigs.k8s.io/yaml, which decodes it with go-yaml v2 and
turns the result into JSON before the JSON decoder sees it. `yaml_to_json` gives the Python
value that JSON decodes to, following the same rules (decision 0015):

- scalars resolve as go-yaml v2 resolves them (YAML 1.1 booleans including `y`/`n`, `0x`/`0o`
  /`0b` and leading-zero octal integers, no sexagesimal numbers), and timestamps stay the
  strings they were written as;
- an integral float becomes the integer JSON would read back (`3.0` is `3`), an integer beyond
  64 bits a float, and a float beyond float64 range (`1e400`) stays a string;
- integer, float and boolean keys become strings; null, collection and 64-bit unsigned keys,
  NaN and infinite values, an alias inside its own anchor and an unknown alias are errors;
- `!!binary` is decoded, other tags on collections and unknown tags on scalars are ignored;
- only the first document counts;
- alias expansion is bounded by go-yaml's rule: once more than 100 of more than 1000 decoded
  nodes come from aliases, at most 99% of them may (falling to 10% by four million nodes), so
  a few hundred bytes can never expand into megabytes.

Parsing is libyaml's (through PyYAML's event API, which keeps nesting under 1000 levels); only
the conversion is ours. It walks the events with explicit stacks, never recursing.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

__all__ = ["YAMLConversionError", "YAMLSyntaxError", "yaml_to_json"]

try:  # libyaml's parser, when PyYAML was built with it (the wheels are)
    from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _Parser  # type: ignore[assignment]


class YAMLSyntaxError(ValueError):
    """The body is not YAML at all."""


class YAMLConversionError(ValueError):
    """The body is YAML that has no JSON form (or expands beyond the alias limit)."""


_TAG = "tag:yaml.org,2002:"
_STR, _BINARY, _MERGE = _TAG + "str", _TAG + "binary", _TAG + "merge"
_RESOLVABLE = frozenset(
    _TAG + name for name in ("str", "bool", "int", "float", "null", "timestamp")
)

_MAX_INT64 = 2**63 - 1
_MAX_UINT64 = 2**64 - 1
# Collections nest at most this deep; libyaml's own limit, checked again for the pure-Python
# parser so both builds answer alike.
_MAX_DEPTH = 1000


class _Marker:
    """A sentinel with a name for debugging."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# A plain `<<`: a merge when it is a key, the string "<<" anywhere else.
_MERGE_KEY = _Marker("<<")
# A mapping waiting for its next key.
_NO_KEY = _Marker("no key")
_MISSING = _Marker("missing")

# Plain scalars go-yaml v2 looks up before trying numbers (resolve.go's table).
_KNOWN: dict[str, Any] = {}
for _words, _value in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), math.nan),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    (("-.inf", "-.Inf", "-.INF"), -math.inf),
):
    for _word in _words:
        _KNOWN[_word] = _value
# The first characters for which go-yaml looks further than "it is a string".
_TABLE_HINTS = frozenset("yYnNtTfFoO~")
_NUMBER_HINTS = frozenset("0123456789+-")

# Go's strconv.ParseInt with base 0 (after go-yaml removed every underscore).
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
# The timestamp layouts go-yaml accepts for an explicit !!timestamp.
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d{1,9})?(?:Z|[-+]\d{2}:\d{2}))"
    r"|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d{1,9})?))?"
)


def yaml_to_json(data: bytes | str) -> Any:
    """The JSON value of the first YAML document in `data` (None for no document)."""
    parser = _Parser(data)
    try:
        return _convert(parser)
    except yaml.YAMLError as exc:
        raise YAMLSyntaxError(_syntax_message(exc)) from None
    finally:
        parser.dispose()


def _syntax_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"yaml: line {mark.line + 1}: {problem}"
    return "yaml: " + " ".join(str(exc).split())


def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's share of decoded nodes that may come from aliases (decode.go)."""
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * ((decoded - 400_000) / 3_600_000)


# What the converter keeps of the events inside anchored nodes, to replay them for aliases:
# (_SCALAR, value, 0), (_MAPPING, 0, 0), (_SEQUENCE, 0, 0), (_END, 0, 0), (_ALIAS, start, end).
_SCALAR, _MAPPING, _SEQUENCE, _END, _ALIAS = range(5)


def _convert(parser: Any) -> Any:
    """Build the first document's JSON value from the parser's events (what go-yaml's
    Unmarshal reads); an alias replays the recorded events of the node its anchor names."""
    parser.get_event()  # stream start
    if parser.check_event(StreamEndEvent):
        return None
    parser.get_event()  # document start
    tape: list[tuple[int, Any, int]] = []
    # Anchor -> [start, end) on the tape; end is -1 while the anchored node is still open.
    anchors: dict[str, tuple[int, int]] = {}
    live: list[tuple[int, str | None]] = []  # open collections read from the parser
    recording = 0  # how many of them carry an anchor (their events go on the tape)
    replaying: list[list[int]] = []  # [position, end] on the tape, one per alias expanding
    building: list[list[Any]] = []  # [container, pending key] of every open collection
    decoded = 1  # the document node, as go-yaml counts it
    from_aliases = 0
    while True:
        if replaying:
            cursor = replaying[-1]
            position = cursor[0]
            if position >= cursor[1]:
                replaying.pop()
                continue
            cursor[0] = position + 1
            code, payload, extra = tape[position]
        else:
            event = parser.get_event()
            cls = event.__class__
            if cls is ScalarEvent:
                code, payload, extra = _SCALAR, _scalar(event), 0
                if recording or event.anchor is not None:
                    tape.append((_SCALAR, payload, 0))
                if event.anchor is not None:
                    anchors[event.anchor] = (len(tape) - 1, len(tape))
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                code, payload, extra = (_MAPPING if cls is MappingStartEvent else _SEQUENCE), 0, 0
                anchor = event.anchor
                if recording or anchor is not None:
                    tape.append((code, 0, 0))
                if anchor is not None:
                    anchors[anchor] = (len(tape) - 1, -1)
                    recording += 1
                live.append((len(tape) - 1, anchor))
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                code, payload, extra = _END, 0, 0
                start, anchor = live.pop()
                if recording:
                    tape.append((_END, 0, 0))
                if anchor is not None:
                    recording -= 1
                    if anchors.get(anchor) == (start, -1):
                        anchors[anchor] = (start, len(tape))
            elif cls is AliasEvent:
                target = anchors.get(event.anchor)
                if target is None:
                    raise YAMLConversionError(f"yaml: unknown anchor '{event.anchor}' referenced")
                if target[1] < 0:
                    # Only an anchor whose node is still open is unfinished: a loop.
                    raise YAMLConversionError(
                        f"yaml: anchor '{event.anchor}' value contains itself"
                    )
                code, payload, extra = _ALIAS, target[0], target[1]
                if recording:
                    tape.append((_ALIAS, payload, extra))
            else:  # pragma: no cover - nothing else comes between a document's start and end
                raise YAMLConversionError(f"yaml: unexpected {cls.__name__}")
        if code == _END:
            value = building.pop()[0]
        else:
            decoded += 1
            if replaying:
                from_aliases += 1
            if (
                from_aliases > 100
                and decoded > 1000
                and from_aliases / decoded > _allowed_alias_ratio(decoded)
            ):
                raise YAMLConversionError("yaml: document contains excessive aliasing")
            if code == _ALIAS:
                replaying.append([payload, extra])
                continue
            if code != _SCALAR:
                if len(building) >= _MAX_DEPTH:
                    raise YAMLConversionError(f"yaml: exceeded max depth of {_MAX_DEPTH}")
                building.append([{} if code == _MAPPING else [], _NO_KEY])
                continue
            value = payload
        if not building:
            parser.get_event()  # the document's end; the rest of the stream is not read
            return _json_value(value)
        frame = building[-1]
        container = frame[0]
        if container.__class__ is list:
            container.append(_json_value(value))
        elif frame[1] is _NO_KEY:
            frame[1] = _MERGE_KEY if value is _MERGE_KEY else _json_key(value)
        elif frame[1] is _MERGE_KEY:
            _merge(container, value)
            frame[1] = _NO_KEY
        else:
            container[frame[1]] = _json_value(value)
            frame[1] = _NO_KEY


def _json_value(value: Any) -> Any:
    """What JSON reads back of a value go-yaml decoded (json.Marshal, then a JSON decoder)."""
    if value.__class__ is float:
        if math.isnan(value) or math.isinf(value):
            shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise YAMLConversionError(f"json: unsupported value: {shown}")
        # Go writes integral floats without a fraction, so JSON reads them as integers.
        if value.is_integer() and -(2**63) <= value <= _MAX_UINT64:
            return int(value)
        return value
    if value is _MERGE_KEY:
        return "<<"
    return value


def _json_key(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON."""
    cls = key.__class__
    if cls is str:
        return key  # type: ignore[no-any-return]
    if cls is bool:
        return "true" if key else "false"
    if cls is int:
        if key > _MAX_INT64:
            raise YAMLConversionError(f"unsupported map key of type uint64: {key}")
        return str(key)
    if cls is float:
        return _float32_text(key)
    if key is None:
        raise YAMLConversionError("unsupported map key: null")
    kind = "sequence" if cls is list else "mapping"
    raise YAMLConversionError(f"yaml: invalid map key: a {kind} cannot be a key")


def _merge(container: dict[str, Any], value: Any) -> None:
    """`<<: *base` or `<<: [*a, *b]`: copy the keys in; earlier mappings of a list win."""
    if value.__class__ is dict:
        container.update(value)
        return
    if value.__class__ is list and all(item.__class__ is dict for item in value):
        for item in reversed(value):
            container.update(item)
        return
    raise YAMLConversionError("yaml: map merge requires map or sequence of maps as the value")


def _scalar(event: Any) -> Any:
    tag = event.tag
    text: str = event.value
    if tag is None:
        if not event.implicit[0]:
            return text  # quoted or block scalars are strings
        if text == "<<":
            return _MERGE_KEY
        return _resolve(text)
    if tag == _STR:
        return text
    if tag == _BINARY:
        try:
            data = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise YAMLConversionError("yaml: !!binary value contains invalid base64 data") from None
        return data.decode("utf-8", errors="replace")
    if tag == _MERGE and text == "<<":
        return _MERGE_KEY
    if tag not in _RESOLVABLE:
        return text  # go-yaml keeps unknown tags' scalars (and "!") as strings
    wanted = tag[len(_TAG) :]
    if wanted == "timestamp" and _is_timestamp(text):
        return text
    value = _resolve(text)
    got = _tag_of(value)
    if got == wanted:
        return value
    if wanted == "float" and got == "int":
        return float(value)
    raise YAMLConversionError(f"yaml: cannot decode !!{got} `{text}` as a !!{wanted}")


def _tag_of(value: Any) -> str:
    if value is None:
        return "null"
    if value.__class__ is bool:
        return "bool"
    if value.__class__ is int:
        return "int"
    if value.__class__ is float:
        return "float"
    return "str"


def _resolve(text: str) -> Any:
    """go-yaml v2's reading of an untagged plain scalar."""
    if not text:
        return None
    first = text[0]
    if first in _TABLE_HINTS or first == ".":
        known = _KNOWN.get(text, _MISSING)
        if known is not _MISSING:
            return known
        if first == "." and _DOT_FLOAT.fullmatch(text):
            number = float(text)
            if not math.isinf(number):
                return number
        return text
    if first not in _NUMBER_HINTS:
        return text
    known = _KNOWN.get(text, _MISSING)  # "+.inf", "-.inf"
    if known is not _MISSING:
        return known
    # A timestamp stays the text it was written as; nothing below reads one as a number.
    plain = text.replace("_", "")
    match = _GO_INT.fullmatch(plain)
    if match is not None:
        number = _go_int(match.group(1), match.group(2))
        # Signed 64 bits, else unsigned 64 bits for a number without a sign.
        if -_MAX_INT64 - 1 <= number <= _MAX_INT64:
            return number
        if not match.group(1) and number <= _MAX_UINT64:
            return number
    if _YAML_FLOAT.fullmatch(plain):
        number = float(plain)
        if not math.isinf(number):
            return number
    return text


def _go_int(sign: str, digits: str) -> int:
    prefix = digits[:2].lower()
    if prefix == "0x":
        number = int(digits[2:], 16)
    elif prefix == "0b":
        number = int(digits[2:], 2)
    elif prefix == "0o":
        number = int(digits[2:], 8)
    elif len(digits) > 1 and digits[0] == "0":
        number = int(digits[1:], 8)
    else:
        number = int(digits)
    return -number if sign == "-" else number


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    month, day = int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    clock = [g for g in match.groups()[3:] if g is not None]
    return not clock or (int(clock[0]) < 24 and int(clock[1]) < 60 and int(clock[2]) < 60)


def _float32_text(value: float) -> str:
    """A float key as Go formats it for YAML keys: float32 precision, shortest, 'g' layout."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.inf if value > 0 else -math.inf
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    single = abs(single)
    if single == 0:
        return sign + "0"
    for precision in range(1, 10):
        text = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, _, exp_text = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exp_text)
    # Go's shortest 'g' switches to an exponent below 1e-4 and from 1e6 (precision 6).
    if exponent < -4 or exponent >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = exponent + 1
    if len(digits) <= whole:
        return sign + digits + "0" * (whole - len(digits))
    return f"{sign}{digits[:whole]}.{digits[whole:]}"
