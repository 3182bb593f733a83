"""Redaction for support bundles: hostnames, serial numbers, UUIDs, IP and MAC addresses, and
secrets are replaced by placeholders before anything leaves the machine.

Consistent: one ``Redactor`` gives the same value the same placeholder everywhere it redacts
(``<ip-1>`` is the same address in every file), so logs stay readable. Values the machine names
(its hostname, its DMI serials) are replaced wherever they appear; the rest are found by their
shape. Secrets go first, so a password inside a URL never survives as a "hostname".
Structured files (JSON, YAML) are parsed and rebuilt with every string redacted, never edited
as text: a substitution can cut through an escape and leave a file nobody can load; a value
under a key that names a secret, a host or a serial is replaced whole. Pure.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable
from typing import Literal

import yaml

from gpuwizard.core.safetext import json_text

Kind = Literal["secret", "host", "serial", "guid", "mac", "uuid", "ip", "id"]

_HEX = "[0-9A-Fa-f]"
PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
)
URL_CREDENTIALS = re.compile(r"(?P<keep>\b[a-zA-Z][\w+.-]*://[^/\s:@]+:)(?P<value>[^/\s@]+)(?=@)")
AUTH_HEADER = re.compile(
    r"(?i)(?P<keep>\bauthorization:\s*(?:bearer|basic|token)\s+)(?P<value>\S+)"
)
TOKEN_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abprs]-[\w-]{10,}|sk-[A-Za-z0-9_-]{20,}|glpat-[\w-]{20,})\b"
)
_SECRET_WORD = r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)"
KEY_VALUE_SECRET = re.compile(
    rf"(?i)(?P<keep>\b[\w.-]*{_SECRET_WORD}\b[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"',;]+)"
)
FLAG_SECRET = re.compile(rf"(?i)(?P<keep>(?<![\w-])--?{_SECRET_WORD}[= ])(?P<value>[^\s\"']+)")
SERIAL_KEY_VALUE = re.compile(
    r"(?i)(?P<keep>\b(?:serial(?:[ _-]?(?:number|no\.?))?|s/n)\s*[:=]\s*)(?P<value>[A-Za-z0-9][\w-]{3,})"
)
GUID = re.compile(
    rf"(?i)(?P<keep>\b(?:node|port|sys(?:tem)?[ _]image)[ _]guid\s*[:=]?\s*)"
    rf"(?P<value>(?:0x)?{_HEX}{{16}}|(?:{_HEX}{{4}}:){{3}}{_HEX}{{4}})"
)
IB_HW_ADDRESS = re.compile(rf"(?<![\w:])(?:{_HEX}{{2}}:){{19}}{_HEX}{{2}}(?![\w:])")
MAC = re.compile(
    rf"(?<![\w:-])(?:{_HEX}{{2}}([:-])){{1}}(?:{_HEX}{{2}}\1){{4}}{_HEX}{{2}}(?![\w:-])"
)
# GPU-<uuid> and MIG-<uuid>: the prefix stays, so only a hex digit may not touch it.
UUID = re.compile(
    rf"(?<!{_HEX}){_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}(?!{_HEX})"
)
IPV6_CANDIDATE = re.compile(
    rf"(?<![\w:.])(?:{_HEX}{{0,4}}:){{2,7}}(?:{_HEX}{{0,4}}|\d{{1,3}}(?:\.\d{{1,3}}){{3}})(?![\w:])"
)
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
HEX_ID = re.compile(r"(?<![0-9A-Fa-f])[0-9a-f]{32}(?![0-9A-Fa-f])")

_KEY_PART = r"(?:^|(?<=[_\-. ]))"
_KEY_END = r"(?:$|(?=[_\-. ]))"
KEY_KINDS: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    ("secret", re.compile(rf"(?i){_KEY_PART}{_SECRET_WORD}{_KEY_END}")),
    ("host", re.compile(rf"(?i){_KEY_PART}(?:host|hostname|fqdn|nodename){_KEY_END}")),
    ("serial", re.compile(rf"(?i){_KEY_PART}serial(?:[_-]?(?:number|no))?{_KEY_END}")),
)
"""A structured file's keys that say what their string value is: it is replaced whole."""

GENERIC_HOSTNAMES = frozenset({"localhost", "localhost.localdomain", "ubuntu", "debian", "rocky"})
"""Image defaults that identify nothing; redacting them would blank every "ubuntu" in a log."""
_NO_SERIAL = re.compile(r"(?i)0+|none|n/?a|default|to be filled.*|not specified|system serial.*")


class Redactor:
    """Replaces identifying values by ``<kind-N>`` placeholders, the same one per value."""

    def __init__(self, hostnames: Iterable[str] = (), serials: Iterable[str] = ()) -> None:
        self.seen: dict[Kind, dict[str, str]] = {}
        names = {n.strip() for n in hostnames if n and n.strip()}
        names |= {n.split(".", 1)[0] for n in names if "." in n}  # the short name of an FQDN
        self.known: list[tuple[Kind, re.Pattern[str]]] = [
            ("host", re.compile(rf"(?i)(?<![\w.-]){re.escape(name)}(?![\w-])"))
            for name in sorted(names - GENERIC_HOSTNAMES, key=len, reverse=True)
        ]
        self.known += [
            ("serial", re.compile(rf"(?<![\w-]){re.escape(s.strip())}(?![\w-])"))
            for s in serials
            if len(s.strip()) >= 4 and " " not in s.strip() and not _NO_SERIAL.fullmatch(s.strip())
        ]

    def placeholder(self, kind: Kind, value: str) -> str:
        table = self.seen.setdefault(kind, {})
        key = value if kind in ("secret", "serial") else value.lower()
        if key not in table:
            table[key] = f"<{kind}-{len(table) + 1}>"
        return table[key]

    @property
    def counts(self) -> dict[str, int]:
        """How many different values of each kind were replaced (never the values)."""
        return {kind: len(values) for kind, values in sorted(self.seen.items())}

    def _whole(self, kind: Kind) -> Callable[[re.Match[str]], str]:
        return lambda m: self.placeholder(kind, m.group(0))

    def _value(self, kind: Kind) -> Callable[[re.Match[str]], str]:
        return lambda m: m.group("keep") + self.placeholder(kind, m.group("value"))

    def _address(self, kind: Kind, keep: Callable[[str], bool]) -> Callable[[re.Match[str]], str]:
        return lambda m: self.placeholder(kind, m.group(0)) if not keep(m.group(0)) else m.group(0)

    def redact(self, text: str) -> str:
        passes: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
            (PRIVATE_KEY, self._whole("secret")),
            (URL_CREDENTIALS, self._value("secret")),
            (AUTH_HEADER, self._value("secret")),
            (TOKEN_SHAPES, self._whole("secret")),
            (FLAG_SECRET, self._value("secret")),
            (KEY_VALUE_SECRET, self._value("secret")),
            *((pattern, self._whole(kind)) for kind, pattern in self.known),
            (SERIAL_KEY_VALUE, self._value("serial")),
            (GUID, self._value("guid")),
            (IB_HW_ADDRESS, self._whole("mac")),
            (MAC, self._address("mac", _is_blank_mac)),
            (UUID, self._whole("uuid")),
            (IPV6_CANDIDATE, self._address("ip", _keep_ipv6)),
            (IPV4, self._address("ip", _keep_ipv4)),
            (HEX_ID, self._whole("id")),
        ]
        for pattern, replace in passes:
            text = pattern.sub(replace, text)
        return text

    # ------------------------------------------------------------------- structured files
    def redact_tree(self, value: object, key: str = "") -> object:
        """A parsed JSON/YAML value with every string (keys too) redacted; the shape kept."""
        match value:
            case str():
                kind = next((k for k, pattern in KEY_KINDS if pattern.search(key)), None)
                if kind is not None and value and value.lower() not in GENERIC_HOSTNAMES:
                    return self.placeholder(kind, value)
                return self.redact(value)
            case dict():
                return {self.redact(str(k)): self.redact_tree(v, str(k)) for k, v in value.items()}
            case list() | tuple():
                return [self.redact_tree(item, key) for item in value]
            case _:
                return value  # numbers, booleans, null, dates: nothing to identify

    def redact_json(self, text: str) -> str | None:
        """The JSON document redacted value by value; None when it does not parse."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return json_text(self.redact_tree(data)) + "\n"  # unsafe characters as \\u escapes

    def redact_yaml(self, text: str) -> str | None:
        """The YAML documents redacted value by value (comments are dropped); None when they do
        not parse."""
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            return None
        redacted = [self.redact_tree(document) for document in documents]
        # allow_unicode=False: PyYAML would write bidi controls and U+2028 as they are.
        dumped: str = yaml.safe_dump_all(redacted, sort_keys=False, allow_unicode=False)
        return dumped

    def redact_file(self, name: str, text: str) -> str:
        """A file for the bundle: JSON and YAML by their structure, anything else (or a file
        that does not parse) as text."""
        structured = None
        if name.endswith(".json"):
            structured = self.redact_json(text)
        elif name.endswith((".yaml", ".yml")):
            structured = self.redact_yaml(text)
        return structured if structured is not None else self.redact(text)


def _is_blank_mac(text: str) -> bool:
    return text.replace("-", ":").lower() in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff")


def _keep_ipv6(text: str) -> bool:
    """Not an address (a time, a PCI slot), or one that identifies nothing (::, ::1)."""
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return True
    return address.is_loopback or address.is_unspecified


def _keep_ipv4(text: str) -> bool:
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError:
        return True  # 999.1.2.3 is a version number, not an address
    return address.is_loopback or address.is_unspecified or text.startswith("255.")
