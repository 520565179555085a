# SPDX-License-Identifier: Apache-2.0
# selector: fieldSelector and labelSelector, as predicates on objects.  The
# fields a kind can be selected on are its Resource's "fields".

import re

from .common import bad_request, meta_of

COMMON_FIELDS = {"metadata.name": "", "metadata.namespace": ""}


def field_value(obj, dotted, missing):
    value = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return missing
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(res, text):
    """Return a predicate for a fieldSelector such as spec.nodeName=n1,status.phase!=Failed."""
    fields = dict(COMMON_FIELDS, **res.fields)
    terms = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        match = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", term)
        if not match:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, term))
        field, op, value = match.groups()
        if field not in fields:
            raise bad_request('field label not supported: %s' % field)
        terms.append((field, op == "!=", value.strip()))

    def matches(obj):
        for field, negate, value in terms:
            if (field_value(obj, field, fields[field]) == value) == negate:
                return False
        return True
    return matches


LABEL_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
LABEL_VALUE = r"[-A-Za-z0-9_.]*"


def split_label_terms(text):
    """Split on commas outside parentheses: a in (x,y),b=c -> two terms."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms if t.strip()]


def parse_label_term(term):
    """One requirement as a function of the labels map."""
    match = re.fullmatch(r"!\s*(%s)" % LABEL_KEY, term)
    if match:
        key = match.group(1)
        return lambda labels: key not in labels
    match = re.fullmatch(r"(%s)\s+(in|notin)\s*\(([^)]*)\)" % LABEL_KEY, term)
    if match:
        key, op, values = match.groups()
        allowed = {v.strip() for v in values.split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    match = re.fullmatch(r"(%s)\s*(==|=|!=)\s*(%s)" % (LABEL_KEY, LABEL_VALUE), term)
    if match:
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = re.fullmatch(LABEL_KEY, term)
    if match:
        return lambda labels: term in labels
    raise bad_request("unable to parse requirement: %s" % term)


def parse_label_selector(text):
    checks = [parse_label_term(t) for t in split_label_terms(text or "")]

    def matches(obj):
        labels = meta_of(obj).get("labels") or {}
        return all(check(labels) for check in checks)
    return matches


