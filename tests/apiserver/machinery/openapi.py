# SPDX-License-Identifier: Apache-2.0
# openapi: /openapi/v2 served from openapi-v2.json, in JSON or (for kubectl
# before 1.24) protobuf, and /openapi/v3 derived from it.

import hashlib
import json
import struct
import threading

from .common import json_bytes


def to_v3_refs(value):
    """Swagger 2.0 schema references, rewritten for OpenAPI 3."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                item = item.replace("#/definitions/", "#/components/schemas/")
            out[key] = to_v3_refs(item)
        return out
    if isinstance(value, list):
        return [to_v3_refs(item) for item in value]
    return value


def v3_operation(op):
    """A swagger 2.0 operation as OpenAPI 3: body parameter -> requestBody,
    response schemas under content types."""
    out = {k: to_v3_refs(v) for k, v in op.items()
           if k not in ("parameters", "responses", "consumes", "produces", "schemes")}
    params = []
    for param in op.get("parameters", []):
        if param.get("in") == "body":
            schema = to_v3_refs(param.get("schema", {}))
            out["requestBody"] = {"content": {ct: {"schema": schema}
                                              for ct in op.get("consumes", ["application/json"])},
                                  "required": bool(param.get("required"))}
            continue
        entry = {k: param[k] for k in ("name", "in", "description", "required") if k in param}
        entry["schema"] = {k: param[k] for k in ("type", "uniqueItems") if k in param}
        params.append(entry)
    if params:
        out["parameters"] = params
    responses = {}
    for code, response in op.get("responses", {}).items():
        entry = {"description": response.get("description", "")}
        if "schema" in response:
            schema = to_v3_refs(response["schema"])
            entry["content"] = {ct: {"schema": schema}
                                for ct in op.get("produces", ["application/json"])}
        responses[code] = entry
    out["responses"] = responses
    return out


def group_version_of(path):
    """api/v1 or apis/GROUP/VERSION: the OpenAPI v3 document a path is in."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 2:
        return "/".join(parts[:2])
    if parts[0] == "apis" and len(parts) >= 3:
        return "/".join(parts[:3])
    return None


def openapi_v3_documents(v2):
    """One OpenAPI 3 document per group version, derived from the v2 one.
    kubectl reads only v3 as JSON (its v2 client wants protobuf), and uses
    it to compute apply patches and to see that fieldValidation is served."""
    schemas = to_v3_refs(v2.get("definitions", {}))
    documents = {}
    for path, item in v2.get("paths", {}).items():
        gv = group_version_of(path)
        if gv is None:
            continue
        doc = documents.setdefault(gv, {
            "openapi": "3.0.0", "info": v2.get("info", {}), "paths": {},
            "components": {"schemas": schemas}})
        converted = {}
        for key, value in item.items():
            if key == "parameters":
                converted[key] = [v3_operation({"parameters": [p]})["parameters"][0]
                                  for p in value]
            else:
                converted[key] = v3_operation(value)
        doc["paths"][path] = converted
    return {gv: json_bytes(doc) for gv, doc in documents.items()}


# /openapi/v2 in protobuf, for kubectl before 1.24 (Debian 12 ships 1.20): it
# asks for nothing else and gives up on a 406.  The message is gnostic's
# openapi_v2.Document with the swagger version, the info and every
# definition: what kubectl reads to find a kind's schema, its patch
# strategies and merge keys, and to validate.  The paths are left out (only
# --dry-run=server looks at them).
PROTOBUF_OPENAPI_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Schema's scalar fields: JSON key -> (field number, kind)
PB_SCHEMA_SCALARS = (
    ("$ref", 1, "string"), ("format", 2, "string"), ("title", 3, "string"),
    ("description", 4, "string"), ("default", 5, "any"), ("multipleOf", 6, "double"),
    ("maximum", 7, "double"), ("exclusiveMaximum", 8, "bool"), ("minimum", 9, "double"),
    ("exclusiveMinimum", 10, "bool"), ("maxLength", 11, "int"), ("minLength", 12, "int"),
    ("pattern", 13, "string"), ("maxItems", 14, "int"), ("minItems", 15, "int"),
    ("uniqueItems", 16, "bool"), ("maxProperties", 17, "int"), ("minProperties", 18, "int"),
    ("discriminator", 26, "string"), ("readOnly", 27, "bool"), ("example", 30, "any"))


def pb_varint(number):
    out = bytearray()
    number &= (1 << 64) - 1  # int64: two's complement, as Go writes it
    while number > 0x7f:
        out.append(number & 0x7f | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def pb_field(number, data):
    """A length-delimited field: strings and embedded messages."""
    if isinstance(data, str):
        data = data.encode()
    return pb_varint(number << 3 | 2) + pb_varint(len(data)) + data


def pb_scalar(number, kind, value):
    if kind == "string":
        return pb_field(number, value)
    if kind == "any":  # gnostic's Any: the value as YAML text, which JSON is
        return pb_field(number, pb_field(2, json.dumps(value)))
    if kind == "double":
        return pb_varint(number << 3 | 1) + struct.pack("<d", float(value))
    if kind == "bool":
        return pb_varint(number << 3) + pb_varint(1) if value else b""
    return pb_varint(number << 3) + pb_varint(int(value))


def pb_named(number, name, value):
    """NamedSchema or NamedAny: name 1, value 2."""
    return pb_field(number, pb_field(1, name) + pb_field(2, value))


def pb_schema(schema):
    out = []
    for key, number, kind in PB_SCHEMA_SCALARS:
        if key in schema:
            out.append(pb_scalar(number, kind, schema[key]))
    out += [pb_field(19, name) for name in schema.get("required", [])]
    out += [pb_scalar(20, "any", value) for value in schema.get("enum", [])]
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        # a oneof: false is written too, to say which member is set
        out.append(pb_field(21, pb_varint(2 << 3) + pb_varint(int(extra))))
    elif isinstance(extra, dict):
        out.append(pb_field(21, pb_field(1, pb_schema(extra))))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        out.append(pb_field(22, b"".join(pb_field(1, t) for t in types)))
    if "items" in schema:
        items = schema["items"] if isinstance(schema["items"], list) else [schema["items"]]
        out.append(pb_field(23, b"".join(pb_field(1, pb_schema(i)) for i in items)))
    out += [pb_field(24, pb_schema(part)) for part in schema.get("allOf", [])]
    if "properties" in schema:
        out.append(pb_field(25, b"".join(pb_named(1, name, pb_schema(sub))
                                         for name, sub in schema["properties"].items())))
    out += [pb_named(31, key, pb_field(2, json.dumps(value)))
            for key, value in schema.items() if key.startswith("x-")]
    return b"".join(out)


def openapi_v2_protobuf(v2):
    info = v2.get("info", {})
    info_pb = b"".join(pb_field(number, info[key]) for key, number in
                       (("title", 1), ("version", 2), ("description", 3)) if key in info)
    definitions = b"".join(pb_named(1, name, pb_schema(schema))
                           for name, schema in v2.get("definitions", {}).items())
    return (pb_field(1, v2.get("swagger", "2.0")) + pb_field(2, info_pb)
            + pb_field(9, definitions))



class OpenAPI:
    """/openapi/v2 served byte for byte from the file; /openapi/v3 built
    from it on first use, as is the protobuf form of v2."""

    def __init__(self, path):
        with open(path, "rb") as src:
            self.v2 = src.read()
        json.loads(self.v2)  # refuse to start with a broken document
        self._v3 = None
        self._v2_protobuf = None
        self._lock = threading.Lock()

    def v2_protobuf(self):
        with self._lock:
            if self._v2_protobuf is None:
                self._v2_protobuf = openapi_v2_protobuf(json.loads(self.v2))
            return self._v2_protobuf

    def v3(self):
        with self._lock:
            if self._v3 is None:
                self._v3 = openapi_v3_documents(json.loads(self.v2))
            return self._v3

    def v3_index(self):
        paths = {}
        for gv, data in sorted(self.v3().items()):
            digest = hashlib.sha512(data).hexdigest()[:32].upper()
            paths[gv] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (gv, digest)}
        return {"paths": paths}


def accepts_json(accept):
    """False when the client asked only for other types (kubectl's v2
    OpenAPI client asks for protobuf only)."""
    if not accept:
        return True
    for item in accept.split(","):
        media = item.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", "application/json"):
            return True
    return False


