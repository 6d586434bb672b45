#!/usr/bin/env python3
"""A stand-in summarizer for `pragma knowledge build` tests (exec:COMMAND).

Reads the OpenAI-style request on stdin and answers like a model would:
stage 1 (a documentation chunk) with a JSON array of entries for the
metrics the chunk names, stage 2 (a merge) with one merged object.
A chunk containing GARBAGE gets prose without JSON."""
import json
import sys

req = json.load(sys.stdin)
system = req["messages"][0]["content"]
user = req["messages"][-1]["content"]

if "Merge them into one object" in system:
    entries = json.loads(user)
    merged = dict(entries[0])
    merged["what"] = " ".join(sorted({e["what"] for e in entries}))
    merged["title"] = "merged: " + merged.get("title", "")
    print("Here is the merged entry:\n```json\n" + json.dumps(merged) + "\n```")
    sys.exit(0)

if "GARBAGE" in user:
    print("I could not find any metrics in this part, sorry.")
    sys.exit(0)

out = []
for word, entry in [
    ("cycles", {"name": "cycles", "title": "CPU cycles", "what": "Counts core cycles (%s)." % ("part 2" if "part 2" in user else "part 1"),
                "how": "PERF_COUNT_HW_CPU_CYCLES", "formula": "", "healthy": "", "reveals": ["backend-bound", "not-a-bottleneck"],
                "remedies": [], "maps_to": "cpu.cycles"}),
    ("branch-misses", {"name": "branch-misses", "title": "Branch misses", "what": "Mispredicted branches.",
                       "how": "PERF_COUNT_HW_BRANCH_MISSES", "formula": "", "healthy": "",
                       "reveals": ["bad-speculation"], "remedies": ["Remove data-dependent branches."],
                       "maps_to": "cpu.no_such_metric"}),
    ("IPC", {"name": "cpu.ipc", "title": "IPC", "what": "Instructions per cycle.", "how": "", "formula": "",
             "healthy": "", "reveals": [], "remedies": [], "maps_to": "cpu.ipc"}),
]:
    if word in user:
        out.append(entry)
out.append({"title": "an entry without a name is dropped"})
print("```json\n" + json.dumps(out) + "\n```")
