"""The string formats of OpenAPI schemas that the API server checks (`format: email`, ...).

The formats are kube-openapi's strfmt registry (the go-openapi defaults), checked as its
validators check them; a format it does not know is accepted unchecked. `duration` takes Go
durations (`1h30m`) and the longer `3 days` spelling; `date-time` is RFC 3339.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal

__all__ = ["check_format", "duration_nanos", "format_checker", "go_duration_nanos", "is_date_time"]

_DATE_RE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIME_RE = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_BASE64_RE = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z"
)
_UUID_RE = {
    "uuid": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid3": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid4": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z", re.I
    ),
    "uuid5": re.compile(
        r"^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z", re.I
    ),
}
# Letters and symbols of any script count as hostname characters, as in the server's pattern.
_HC = "[a-zA-Z0-9$+<=>^`|~\u00a0-\U0010ffff]"
_HCD = "[-a-zA-Z0-9$+<=>^`|~\u00a0-\U0010ffff]"
# The two patterns with Unicode ranges take tens of milliseconds to compile: on first use.
_HOSTNAME_PATTERN = (
    rf"^({_HC}((-?{_HC}{{0,62}})?)|"
    rf"({_HC}(({_HCD}{{0,61}}{_HC})?)(\.)){{1,}}({_HC})(-?{_HC}){{1,62}})\Z"
)
_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-\u0080-\U0010ffff]+"
_QUOTED = r'"(?:[^"\\\r\n]|\\.)*"'
_ADDR = rf"(?:{_ATOM}(?:\.{_ATOM})*|{_QUOTED})@(?:{_ATOM}(?:\.{_ATOM})*|\[[^\[\]\\]*\])"
_WORD = rf"(?:{_ATOM}|{_QUOTED})"
_EMAIL_PATTERN = rf"^\s*(?:{_ADDR}|(?:{_WORD}(?:[\s.]+{_WORD})*\s*)?<{_ADDR}>)\s*\Z"


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_MAC_RE = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2})(?:\1[0-9a-fA-F]{2})*"
    r"|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4})+)\Z"
)
_HEXCOLOR_RE = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR_RE = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)\Z", re.ASCII)
_SSN_RE = re.compile(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}\Z")
_CREDITCARD_RE = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})\Z"
)
_BSON_RE = re.compile(r"^[0-9a-fA-F]{24}\Z")
_GO_DURATION_RE = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_GO_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_SCALA_DURATION_RE = re.compile(r"^\s*(?:[0-9]+\s*[A-Za-z\u00b5]+\s*)+\Z")
_SCALA_PART_RE = re.compile(r"([0-9]+)\s*([A-Za-z\u00b5]+)")
_SCALA_UNITS = (
    (("ns", "nano"), 1),
    (("us", "\u00b5s", "micro"), 1_000),
    (("ms", "milli"), 1_000_000),
    (("s", "sec"), 1_000_000_000),
    (("m", "min"), 60_000_000_000),
    (("h", "hr", "hour"), 3_600_000_000_000),
    (("d", "day"), 86_400_000_000_000),
    (("w", "wk", "week"), 604_800_000_000_000),
)


def _is_date(text: str) -> bool:
    m = _DATE_RE.match(text)
    if m is None:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def is_date_time(text: str) -> bool:
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME_RE.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def go_duration_nanos(text: str) -> int | None:
    """Nanoseconds of a Go duration (`1h30m`, `-1.5s`) as time.ParseDuration reads it, or None."""
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        return None
    total = Decimal(0)
    while rest:
        m = _GO_DURATION_RE.match(rest)
        if m is None or m.end() == 0:
            return None
        whole, frac, unit = m.groups()
        if not whole and not frac:
            return None
        if unit not in _GO_UNITS:
            return None
        total += (Decimal(whole or "0") + Decimal(f"0.{frac or '0'}")) * _GO_UNITS[unit]
        rest = rest[m.end() :]
    if total > 2**63 - 1:
        return None
    return int(-total if negative else total)


def duration_nanos(text: str) -> int | None:
    """Nanoseconds of a `duration` format string (Go syntax, or `3 days`-style), or None."""
    nanos = go_duration_nanos(text)
    if nanos is not None:
        return nanos
    if not _SCALA_DURATION_RE.match(text):
        return None
    total, matched = 0, False
    for number, unit in _SCALA_PART_RE.findall(text):
        unit = unit.strip().lower()
        for variants, factor in _SCALA_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or unit == variant:
                    matched = True
                    total += int(number) * factor
    return total if matched else None


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_cidr(text: str) -> bool:
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit():
        return False
    ip = _parse_ip(addr)
    return ip is not None and int(bits) <= (32 if ip.version == 4 and "." in addr else 128)


def _is_mac(text: str) -> bool:
    m = _MAC_RE.match(text)
    if m is None:
        return False
    octets = len(text.replace(":", "").replace("-", "").replace(".", "")) // 2
    return octets in (6, 8, 20)


_HOST_OK = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:[]%"
)
_ESCAPE_RE = re.compile(r"%(?![0-9a-fA-F]{2})")


def _is_request_uri(text: str) -> bool:
    """What Go's url.ParseRequestURI accepts: an absolute URI or an absolute path."""
    if not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return False
    if text == "*":
        return True
    scheme, rest = "", text
    for i, c in enumerate(text):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                break
            continue
        if c == ":":
            if i == 0:
                return False
            scheme, rest = text[:i], text[i + 1 :]
        break
    rest = rest.partition("?")[0]
    if not rest.startswith("/"):
        return bool(scheme)
    if rest.startswith("//") and scheme:
        authority, _, rest = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if any(c not in _HOST_OK and ord(c) < 0x80 for c in host) or _ESCAPE_RE.search(host):
            return False
        if not host.startswith("["):
            _, colon, port = host.rpartition(":")
            if colon and port and not port.isdigit():
                return False
    return _ESCAPE_RE.search(rest) is None


def _is_isbn10(text: str) -> bool:
    digits = re.sub(r"[\s-]+", "", text)
    if not re.match(r"^(?:[0-9]{9}X|[0-9]{10})\Z", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _is_isbn13(text: str) -> bool:
    digits = re.sub(r"[\s-]+", "", text)
    if not re.match(r"^[0-9]{13}\Z", digits):
        return False
    total = sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(digits))
    return total % 10 == 0


def _is_credit_card(text: str) -> bool:
    digits = re.sub(r"[^0-9]+", "", text)
    if not _CREDITCARD_RE.match(digits):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_ipv4(text: str) -> bool:
    return _parse_ip(text) is not None and "." in text


def _is_ipv6(text: str) -> bool:
    return _parse_ip(text) is not None and ":" in text


def _is_email(text: str) -> bool:
    return _compiled(_EMAIL_PATTERN).match(text) is not None


def _is_hostname(text: str) -> bool:
    if not _compiled(_HOSTNAME_PATTERN).match(text) or len(text.encode()) > 255:
        return False
    return all(len(part.encode()) <= 63 for part in text.split("."))


def _matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: rx.match(s) is not None


def _is_duration(text: str) -> bool:
    return duration_nanos(text) is not None


# Formats the server validates, by name with dashes removed; any other format is ignored.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: _BSON_RE.match(s) is not None,
    "uri": _is_request_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": _is_mac,
    **{name: _matcher(rx) for name, rx in _UUID_RE.items()},
    "isbn": lambda s: _is_isbn10(s) or _is_isbn13(s),
    "isbn10": _is_isbn10,
    "isbn13": _is_isbn13,
    "creditcard": _is_credit_card,
    "ssn": lambda s: len(s) == 11 and _SSN_RE.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR_RE.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR_RE.match(s) is not None,
    "byte": lambda s: _BASE64_RE.match(s) is not None,
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": is_date_time,
}


def format_checker(fmt: str) -> Callable[[str], bool] | None:
    """The check of string format `fmt` (`date-time` and `datetime` alike), or None for a
    format the server ignores."""
    return _FORMATS.get(fmt.replace("-", ""))


def check_format(fmt: str, value: str) -> bool | None:
    """Whether `value` is valid in string format `fmt`; None for a format the server ignores."""
    check = format_checker(fmt)
    return None if check is None else check(value)
