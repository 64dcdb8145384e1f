#!/usr/bin/env python3
"""Derive the ground truth's expected labels and findings from the label oracle.

For every scenario of groundtruth/ground_truth.json this builds the graph in
which the assessor (coordbench-green) sends the task to the topology's entry
agent and each agent calls each of its peers once, runs the label oracle
(scripts/label_oracle.py, the rules of docs/evaluators.md) on it with the
default config (the assessor not measured), and writes the oracle's label and
finding kinds into `expected.label` and `expected.findings`. Everything else
in the file is left as it is, byte for byte.

    scripts/derive_ground_truth_labels.py            # rewrite the file
    scripts/derive_ground_truth_labels.py --check    # exit 1 if it would change
    scripts/derive_ground_truth_labels.py --graphs   # print the oracle's input

Each change is printed as `id: old label [findings] -> new label [findings]`.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import label_oracle  # noqa: E402

ASSESSOR = "coordbench-green"
DEFAULT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "groundtruth", "ground_truth.json")


def topology_graph(sc):
    """The oracle's input for one scenario."""
    top = sc["topology"]
    nodes = [{"name": ASSESSOR, "assessor": True}]
    edges = [[ASSESSOR, top["entry"], 1]]
    for a in top["agents"]:
        nodes.append({"name": a["name"]})
        for p in a["peers"]:
            edges.append([a["name"], p, 1])
    return {"id": sc["id"], "nodes": nodes, "edges": edges, "include_virtual_nodes": False}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default=DEFAULT_FILE, help="the ground truth (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if the file is not up to date")
    ap.add_argument("--graphs", action="store_true", help="print the oracle's input for the scenarios and exit")
    args = ap.parse_args()

    with open(args.file, encoding="utf-8") as f:
        raw = f.read()
    gt = json.loads(raw)
    graphs = [topology_graph(sc) for sc in gt["scenarios"]]
    if args.graphs:
        json.dump({"graphs": graphs}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0

    changed = 0
    for sc, g in zip(gt["scenarios"], graphs):
        res = label_oracle.judge(g)
        exp = sc["expected"]
        kinds = [f["kind"] for f in res["findings"]]
        if exp.get("label") != res["label"] or exp.get("findings") != kinds:
            changed += 1
            print("%s (%s): %s %s -> %s %s" % (sc["id"], sc["topology"]["pattern"], exp.get("label"),
                                               exp.get("findings"), res["label"], kinds))
        exp["label"] = res["label"]
        exp["findings"] = kinds
    out = json.dumps(gt, indent=2, ensure_ascii=False) + "\n"
    if args.check:
        if out != raw:
            print("%s is not up to date with the label oracle (%d labels differ)" % (args.file, changed), file=sys.stderr)
            return 1
        return 0
    if out != raw:
        with open(args.file, "w", encoding="utf-8") as f:
            f.write(out)
    print("%d scenarios, %d changed" % (len(graphs), changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
