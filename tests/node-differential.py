#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# node-differential: random node pairs through node-patch3way, checked against kubectl
"""Differential test for node-patch3way.

    node-differential.py [--cases N] [--seed S] [--jobs J] [--dir DIR]

For each case it makes a random node and a random desired state, lets
node-patch3way bring the node there (so the node carries the stash
annotations, as after an earlier run), adds foreign labels, annotations,
capacity keys, conditions and taints as another component would, changes
some of the fields the tool owns behind its back, and makes a second desired
state from the first (elements added, removed, reordered, changed; whole sets
emptied now and then).  One case in eight skips the first run, so the node
has no stash (the upgrade path); three in eight get the node as
virtual-kubelet would have left it, its stash written with Go's zero values
(taking a node over).

Then it checks that:
  - kubectl patch --local applies our patch to CURRENT exactly as
    node-patch3way -o node does (same JSON value);
  - the result keeps every foreign label, annotation, capacity key,
    condition and taint unchanged;
  - the result has every label, annotation, capacity key, address and
    condition field of the second desired state, and none of the ones the
    tool wrote before and the second state dropped;
  - (one case in three) computing again against the result gives a patch
    that changes nothing
    (upstream may restate a merge list's order when foreign elements are in it).

Prints one summary line on success; on failure the seed and the first
failing cases on stderr, exit 1.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

LABEL_KEYS = ["type", "zone", "tier", "env", "kubernetes.io/role", "k1", "k2", "k3"]
ANN_KEYS = ["note", "owner", "example.com/a", "example.com/b", "x", "y"]
RES_KEYS = ["cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu"]
RES_VALUES = ["1", "2", "4", "8", "110", "16Gi", "32Gi", "100Gi", "500m", "0"]
COND_TYPES = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure",
              "NetworkUnavailable", "ProviderHealthy"]
ADDR_TYPES = ["InternalIP", "ExternalIP", "Hostname", "InternalDNS"]
INFO_KEYS = ["kubeletVersion", "osImage", "architecture", "operatingSystem",
             "kernelVersion", "containerRuntimeVersion"]
STATUSES = ["True", "False", "Unknown"]
TIMES = ["2024-05-01T10:00:%02dZ" % s for s in range(0, 60, 5)]
STASH = ("virtual-kubelet.io/last-applied-node-status",
         "virtual-kubelet.io/last-applied-object-meta")


def rand_map(rng, keys, values, lo=0, hi=None):
    hi = len(keys) if hi is None else hi
    return {k: rng.choice(values) for k in rng.sample(keys, rng.randint(lo, hi))}


def rand_condition(rng, ctype):
    c = {"type": ctype, "status": rng.choice(STATUSES)}
    if rng.random() < 0.7:
        c["lastHeartbeatTime"] = rng.choice(TIMES)
    if rng.random() < 0.7:
        c["lastTransitionTime"] = rng.choice(TIMES)
    if rng.random() < 0.5:
        c["reason"] = rng.choice(["KubeletReady", "Fine", "Broken", "NA"])
    if rng.random() < 0.4:
        c["message"] = rng.choice(["all good", "disk <90%", "a & b", ""])
    return c


def rand_address(rng, atype):
    if atype == "Hostname":
        return {"type": atype, "address": rng.choice(["vk-0", "vk-1", "node.example"])}
    if atype == "InternalDNS":
        return {"type": atype, "address": "vk.%d.internal" % rng.randint(0, 9)}
    return {"type": atype, "address": "10.0.%d.%d" % (rng.randint(0, 3), rng.randint(1, 9))}


def rand_images(rng):
    return [{"names": ["registry.example/img%d:%d" % (i, rng.randint(1, 3))],
             "sizeBytes": rng.randint(1000, 10 ** 9)} for i in range(rng.randint(0, 3))]


def rand_status(rng):
    st = {}
    if rng.random() < 0.8:
        st["capacity"] = rand_map(rng, RES_KEYS, RES_VALUES, 1)
    if rng.random() < 0.6:
        st["allocatable"] = rand_map(rng, RES_KEYS, RES_VALUES, 1)
    if rng.random() < 0.9:
        st["conditions"] = [rand_condition(rng, t)
                            for t in rng.sample(COND_TYPES, rng.randint(1, 5))]
    if rng.random() < 0.7:
        st["addresses"] = [rand_address(rng, t)
                           for t in rng.sample(ADDR_TYPES, rng.randint(1, 3))]
    if rng.random() < 0.5:
        st["nodeInfo"] = rand_map(rng, INFO_KEYS, ["v1.30.1", "linux", "amd64", "6.1", ""], 1, 4)
    if rng.random() < 0.4:
        st["daemonEndpoints"] = {"kubeletEndpoint": {"Port": rng.choice([10250, 10255])}}
    if rng.random() < 0.4:
        imgs = rand_images(rng)
        if imgs:
            st["images"] = imgs
    if rng.random() < 0.2:
        st["phase"] = "Running"
    return st


def rand_desired(rng, name):
    meta = {"name": name}
    if rng.random() < 0.85:
        meta["labels"] = rand_map(rng, LABEL_KEYS, ["virtual-kubelet", "a", "b", ""], 1)
    if rng.random() < 0.7:
        meta["annotations"] = rand_map(rng, ANN_KEYS, ["1", "two", "", "{\"j\":1}"], 1)
    d = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": rand_status(rng)}
    if rng.random() < 0.3:
        d["spec"] = {"taints": [{"key": "virtual-kubelet.io/provider", "value": "mock",
                                 "effect": "NoSchedule"}]}
    return d


def mutate_map(rng, m, keys, values):
    m = dict(m)
    for k in list(m):
        r = rng.random()
        if r < 0.25:
            del m[k]
        elif r < 0.45:
            m[k] = rng.choice(values)
    for k in keys:
        if k not in m and rng.random() < 0.15:
            m[k] = rng.choice(values)
    return m


def mutate_list(rng, items, types, make):
    out = []
    for it in items:
        r = rng.random()
        if r < 0.25:
            continue
        if r < 0.5:
            it = make(rng, it["type"])
        out.append(it)
    have = {it["type"] for it in out}
    for t in types:
        if t not in have and rng.random() < 0.2:
            out.append(make(rng, t))
    if rng.random() < 0.4:
        rng.shuffle(out)
    return out


def next_desired(rng, d0):
    """A later desired state: the same node with its sets changed."""
    d = copy.deepcopy(d0)
    meta, st = d["metadata"], d["status"]
    if rng.random() < 0.1:
        meta.pop("labels", None)
    elif "labels" in meta or rng.random() < 0.3:
        meta["labels"] = mutate_map(rng, meta.get("labels", {}), LABEL_KEYS, ["a", "b", ""])
    if rng.random() < 0.1:
        meta.pop("annotations", None)
    elif "annotations" in meta or rng.random() < 0.3:
        meta["annotations"] = mutate_map(rng, meta.get("annotations", {}), ANN_KEYS,
                                         ["1", "two", ""])
    for key in ("capacity", "allocatable"):
        if key in st:
            st[key] = mutate_map(rng, st[key], RES_KEYS, RES_VALUES)
    if rng.random() < 0.1:
        st.pop("conditions", None)
    else:
        st["conditions"] = mutate_list(rng, st.get("conditions", []), COND_TYPES,
                                       rand_condition)
    if rng.random() < 0.1:
        st["addresses"] = []
    elif "addresses" in st:
        st["addresses"] = mutate_list(rng, st["addresses"], ADDR_TYPES, rand_address)
    if "nodeInfo" in st:
        st["nodeInfo"] = mutate_map(rng, st["nodeInfo"], INFO_KEYS, ["v1.31.0", "arm64"])
    if rng.random() < 0.3:
        st["images"] = rand_images(rng)
    if rng.random() < 0.2:
        st.pop("daemonEndpoints", None)
    return d


def add_foreign(rng, node, i):
    """What other components write: kept apart from the keys the tool uses."""
    foreign = {"labels": {}, "annotations": {}, "capacity": {}, "conditions": [],
               "taints": []}
    meta = node.setdefault("metadata", {})
    for n in range(rng.randint(0, 3)):
        foreign["labels"]["foreign.example/l%d" % n] = rng.choice(["x", "", "y%d" % i])
    for n in range(rng.randint(0, 3)):
        foreign["annotations"]["foreign.example/a%d" % n] = rng.choice(["x", "", "{}"])
    st = node.setdefault("status", {})
    for n in range(rng.randint(0, 2)):
        foreign["capacity"]["foreign.example/dev%d" % n] = str(rng.randint(1, 8))
    for n in range(rng.randint(0, 3)):
        foreign["conditions"].append({"type": "Foreign%d" % n, "status": rng.choice(STATUSES),
                                      "reason": "NodeProblemDetector"})
    if rng.random() < 0.3:
        foreign["taints"].append({"key": "foreign.example/t", "effect": "NoExecute"})
    meta.setdefault("labels", {}).update(foreign["labels"])
    meta.setdefault("annotations", {}).update(foreign["annotations"])
    if foreign["capacity"]:
        st.setdefault("capacity", {}).update(foreign["capacity"])
    if foreign["conditions"]:
        conds = st.setdefault("conditions", [])
        for c in foreign["conditions"]:
            conds.insert(rng.randint(0, len(conds)), c)
    if foreign["taints"]:
        node.setdefault("spec", {}).setdefault("taints", []).extend(foreign["taints"])
    # someone else also changes a field the tool owns; the tool overwrites it
    conds = [c for c in st.get("conditions", []) if not c["type"].startswith("Foreign")]
    if conds and rng.random() < 0.3:
        rng.choice(conds)["status"] = rng.choice(STATUSES)
    return foreign


class Failure(Exception):
    pass


def go_json(value):
    """json.Marshal's text: compact, <>& escaped (keys already in Go order)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_status(st):
    """A NodeStatus as virtual-kubelet's Go structs marshal it, zero values included."""
    out = {}
    for key in ("capacity", "allocatable"):
        if st.get(key):
            out[key] = dict(sorted(st[key].items()))
    if st.get("phase"):
        out["phase"] = st["phase"]
    if st.get("conditions"):
        out["conditions"] = []
        for c in st["conditions"]:
            g = {"type": c["type"], "status": c.get("status", ""),
                 "lastHeartbeatTime": c.get("lastHeartbeatTime"),
                 "lastTransitionTime": c.get("lastTransitionTime")}
            for k in ("reason", "message"):
                if c.get(k):
                    g[k] = c[k]
            out["conditions"].append(g)
    if st.get("addresses"):
        out["addresses"] = [{"type": a["type"], "address": a["address"]}
                            for a in st["addresses"]]
    port = st.get("daemonEndpoints", {}).get("kubeletEndpoint", {}).get("Port", 0)
    out["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
    info = st.get("nodeInfo", {})
    out["nodeInfo"] = {k: info.get(k, "") for k in (
        "machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
        "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
        "operatingSystem", "architecture")}
    if st.get("images"):
        out["images"] = st["images"]
    return out


def vk_node(base, desired):
    """The node as virtual-kubelet leaves it after applying desired to base."""
    node = copy.deepcopy(base)
    meta, dmeta = node["metadata"], desired["metadata"]
    stash_meta = {"name": meta["name"], "uid": meta["uid"]}
    if dmeta.get("labels"):
        stash_meta["labels"] = dict(sorted(dmeta["labels"].items()))
        meta["labels"] = dict(dmeta["labels"])
    if dmeta.get("annotations"):
        stash_meta["annotations"] = dict(sorted(dmeta["annotations"].items()))
    meta["annotations"] = dict(dmeta.get("annotations", {}))
    meta["annotations"][STASH[0]] = go_json(go_status(desired["status"]))
    meta["annotations"][STASH[1]] = go_json(stash_meta)
    node["status"] = copy.deepcopy(desired["status"])
    return node


def run_tool(tool, current, desired, workdir, tag, output="both"):
    cur = os.path.join(workdir, tag + ".current.json")
    with open(cur, "w") as f:
        json.dump(current, f)
    p = subprocess.run([tool, "--current", cur, "-o", output, "-"],
                       input=json.dumps(desired), capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure("node-patch3way exit %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def run_kubectl(kubectl, current, patch, workdir, tag):
    cur = os.path.join(workdir, tag + ".kubectl.json")
    with open(cur, "w") as f:
        json.dump(current, f)
    p = subprocess.run([kubectl, "patch", "--local", "-f", cur, "--type", "strategic",
                        "-p", json.dumps(patch), "-o", "json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure("kubectl exit %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def by_type(items):
    return {it["type"]: it for it in items or []}


def check_result(res, current, d0, d1, foreign, stashed):
    meta, st = res.get("metadata", {}), res.get("status", {})
    labels, anns = meta.get("labels", {}), meta.get("annotations", {})
    conds = by_type(st.get("conditions"))
    # foreign state survives untouched
    for k, v in foreign["labels"].items():
        if labels.get(k) != v:
            raise Failure("foreign label %r lost or changed" % k)
    for k, v in foreign["annotations"].items():
        if anns.get(k) != v:
            raise Failure("foreign annotation %r lost or changed" % k)
    for k, v in foreign["capacity"].items():
        if st.get("capacity", {}).get(k) != v:
            raise Failure("foreign capacity %r lost or changed" % k)
    for c in foreign["conditions"]:
        if conds.get(c["type"]) != c:
            raise Failure("foreign condition %r lost or changed" % c["type"])
    if res.get("spec") != current.get("spec"):
        raise Failure("spec changed")
    # the desired state is there
    dmeta, dst = d1["metadata"], d1["status"]
    for k, v in dmeta.get("labels", {}).items():
        if labels.get(k) != v:
            raise Failure("desired label %r missing" % k)
    for k, v in dmeta.get("annotations", {}).items():
        if anns.get(k) != v:
            raise Failure("desired annotation %r missing" % k)
    for key in ("capacity", "allocatable", "nodeInfo"):
        for k, v in dst.get(key, {}).items():
            if st.get(key, {}).get(k) != v:
                raise Failure("desired %s.%s missing" % (key, k))
    for c in dst.get("conditions", []):
        got = conds.get(c["type"], {})
        for k, v in c.items():
            if got.get(k) != v:
                raise Failure("desired condition %s.%s missing" % (c["type"], k))
    addrs = by_type(st.get("addresses"))
    for a in dst.get("addresses", []):
        if addrs.get(a["type"]) != a:
            raise Failure("desired address %s missing" % a["type"])
    if dst.get("images") and st.get("images") != dst["images"]:
        raise Failure("desired images not set")
    for k in STASH:
        if k not in anns:
            raise Failure("stash annotation %s missing" % k)
    if not stashed:
        return
    # what the tool wrote before and the new state dropped is gone
    gone = [("labels", labels, d0["metadata"].get("labels", {}),
             dmeta.get("labels", {}), foreign["labels"]),
            ("annotations", anns, d0["metadata"].get("annotations", {}),
             dmeta.get("annotations", {}), foreign["annotations"]),
            ("capacity", st.get("capacity", {}), d0["status"].get("capacity", {}),
             dst.get("capacity", {}), foreign["capacity"]),
            ("conditions", conds, by_type(d0["status"].get("conditions")),
             by_type(dst.get("conditions")), {}),
            ("addresses", addrs, by_type(d0["status"].get("addresses")),
             by_type(dst.get("addresses")), {})]
    for what, have, before, now, theirs in gone:
        for k in before:
            if k not in now and k not in theirs and k in have:
                raise Failure("dropped %s %r still there" % (what, k))


def one_case(args, i, seed, workdir):
    rng = random.Random("%d/%d" % (seed, i))
    name = "vk-%d" % i
    base = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "uid-%d" % i, "resourceVersion": "1"},
            "status": {}}
    d0 = rand_desired(rng, name)
    how = rng.random()
    stashed = how >= 0.125
    tag = "c%d" % i
    if how < 0.125:
        current = base
    elif how < 0.5:
        current = vk_node(base, d0)
    else:
        current = run_tool(args.tool, base, d0, workdir, tag + "a", "node")
    foreign = add_foreign(rng, current, i)
    d1 = next_desired(rng, d0)
    both = run_tool(args.tool, current, d1, workdir, tag + "b")
    ours, patch = both["node"], both["patch"]
    theirs = run_kubectl(args.kubectl, current, patch, workdir, tag)
    if ours != theirs:
        raise Failure("applied results differ\npatch:   %s\nours:    %s\nkubectl: %s" %
                      (json.dumps(patch, sort_keys=True), json.dumps(ours, sort_keys=True),
                       json.dumps(theirs, sort_keys=True)))
    check_result(theirs, current, d0, d1, foreign, stashed)
    if i % 3:
        return
    again = run_tool(args.tool, theirs, d1, workdir, tag + "c", "both")
    if again["node"] != theirs:
        raise Failure("not a fixpoint: a second run sends %s" % json.dumps(again["patch"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--tool", default="node-patch3way")
    ap.add_argument("--kubectl", default=os.environ.get("KT_KUBECTL", "kubectl"))
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = {pool.submit(one_case, args, i, seed, workdir): i for i in range(args.cases)}
            for fut in concurrent.futures.as_completed(futs):
                try:
                    fut.result()
                except Failure as e:
                    failures.append((futs[fut], str(e)))
                except (OSError, ValueError, KeyError, TypeError) as e:
                    failures.append((futs[fut], "%s: %s" % (type(e).__name__, e)))
    if failures:
        failures.sort()
        sys.stderr.write("seed %d: %d of %d cases failed\n" % (seed, len(failures), args.cases))
        for i, msg in failures[:5]:
            sys.stderr.write("case %d: %s\n" % (i, msg))
        return 1
    print("%d cases passed (seed %d)" % (args.cases, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
