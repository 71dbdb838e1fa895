#!/usr/bin/env python3
"""Turns the progress logs of `falsify mutate` runs cut short (their report
never written) into a journal (--journal) that a later run takes: each
"[i/n] mID file:line op Status ..." line becomes that mutant's gates result.
What a log line lacks (a killer's margin, a survivor's changed outputs) is
left out. Usage: log_to_journal.py MUTANTS.json HEADER.json LOG... > JOURNAL"""
import json
import re
import sys

LINE = re.compile(
    r"^\[\d+/\d+\] m(\d+)\s+(\S+):(\d+) (\S+)\s+(Killed|Survived|NoEffect|RuntimeError|Timeout)"
    r"\s+(.*) \(([\d.]+) s\)$", re.S)


def records(text):
    """Each progress record, its continuation lines (a RuntimeError's tail) joined."""
    current = None
    for line in text.splitlines():
        if line.startswith("["):
            if current is not None:
                yield current
            current = line
        elif current is not None and not current.endswith(" s)"):
            current += "\n" + line
        else:
            if current is not None:
                yield current
            current = None
    if current is not None:
        yield current


def main():
    mutants = {m["id"]: m for m in json.load(open(sys.argv[1]))}
    header = json.load(open(sys.argv[2]))
    skip = set(header.pop("skip_ids", []))
    print(json.dumps(header, separators=(",", ":")))
    for log in sys.argv[3:]:
        for record in records(open(log).read()):
            match = LINE.match(record)
            if not match:
                continue
            mid, file, line, op, status, rest, seconds = match.groups()
            mid = int(mid)
            if mid in skip:
                continue
            m = mutants[mid]
            assert (m["file"], m["line"], m["operator"]) == (file, int(line), op), record
            entry = {"id": mid, "phase": "gates", "file": m["file"], "line": m["line"],
                     "original": m["original"], "replacement": m["replacement"],
                     "status": status, "reason": "", "gate": "", "term": "", "margin": None,
                     "killedBy": [], "gatesRun": 0, "changedOutputs": [],
                     "seconds": float(seconds), "sanitizer": "", "sanitizerFinding": "",
                     "from": log.rsplit("/", 2)[-2] + "/run.log"}
            if status == "Killed":
                gate, _, term = rest.partition(" ")
                entry.update(gate=gate, term=term, killedBy=[gate],
                             reason=f"{gate} went red on {term}")
            else:
                entry["reason"] = rest.strip()
                ran = re.search(r"\((\d+) ran\)", rest)
                entry["gatesRun"] = int(ran.group(1)) if ran else 0
            print(json.dumps(entry, separators=(",", ":")))


main()
