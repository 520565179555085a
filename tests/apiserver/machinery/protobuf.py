# SPDX-License-Identifier: Apache-2.0
# protobuf: reading the few Kubernetes protobuf bodies clients send
# (kubectl writes a CSR's approval that way): the wire format, the
# runtime.Unknown envelope, ObjectMeta and metav1.Time.  A kind that accepts
# them maps its own message's fields with these.

from datetime import datetime, timezone

from .common import bad_request, rfc3339

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


def varint(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data):
    """{field number: [values]}: ints for varints, bytes for the rest."""
    out, pos = {}, 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 2:
            size, pos = varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field %d" % number)
            value, pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ValueError("truncated field %d" % number)
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError("unsupported wire type %d" % wire)
        out.setdefault(number, []).append(value)
    return out


def text(found, number):
    values = found.get(number)
    return values[-1].decode("utf-8") if values else None


def texts(found, number):
    return [v.decode("utf-8") for v in found.get(number, [])]


def string_map(found, number):
    out = {}
    for entry in found.get(number, []):
        pair = fields(entry)
        out[text(pair, 1) or ""] = text(pair, 2) or ""
    return out


def time_of(found, number):
    values = found.get(number)
    if not values:
        return None
    seconds = fields(values[-1]).get(1, [0])[-1]
    if seconds >= 1 << 63:
        seconds -= 1 << 64
    if seconds <= 0:
        return None  # Go's zero time: not set
    return rfc3339(datetime.fromtimestamp(seconds, timezone.utc))


def object_meta(data):
    """The ObjectMeta fields a write can change or check."""
    found = fields(data)
    meta = {}
    for number, key in ((1, "name"), (2, "generateName"), (3, "namespace"), (5, "uid"),
                        (6, "resourceVersion")):
        value = text(found, number)
        if value:
            meta[key] = value
    for number, key in ((11, "labels"), (12, "annotations")):
        value = string_map(found, number)
        if value:
            meta[key] = value
    if found.get(14):
        meta["finalizers"] = texts(found, 14)
    return meta


def unwrap(body):
    """(apiVersion, kind, raw message) of a runtime.Unknown body."""
    try:
        if not body.startswith(MAGIC):
            raise ValueError("no k8s protobuf magic number")
        envelope = fields(body[len(MAGIC):])
        type_meta = fields(envelope.get(1, [b""])[-1])
        return text(type_meta, 1), text(type_meta, 2), envelope.get(2, [b""])[-1]
    except (ValueError, UnicodeDecodeError) as err:
        raise bad_request("the protobuf body cannot be read: %s" % err)
