#!/usr/bin/env python3
"""scripts/replay.py without a GPU: a fake FLA history (a git repository made
here, two bugs and their fixes) replayed with a stand-in candidate script
(tests/python/replay/fake_candidate.py) through the real `deltaproof gen` and
`gate check`:
  - a 3% scaling bug: buggy caught by the gate (every term red), fixed green;
  - a kernel that raises: buggy caught as a crash with the kernel's message;
  - a fix that is a guard, on a packed trigger: buggy caught, fixed `refused` (its
    message matches the entry's `refusal`);
  - a version that does not import without a compat edit: the edit applied, and
    recorded in the report;
  - refused with a sentence (exit 2): a compat edit that touches a line the fix
    changes, an `old` that is not in the file, a corpus that breaks its schema
    (naming the field), an unknown id;
  - the committed corpus (falsify/real-bugs.json) passes `check`.
Usage: replay_test.py --deltaproof build/bin/deltaproof. Exits 1 naming the
first check that fails."""
import argparse
import copy
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "replay.py"
FAKE = ROOT / "tests" / "python" / "replay" / "fake_candidate.py"
GEN = ["--op", "gdn", "--B", "1", "--T", "20", "--H", "1", "--K", "4", "--V", "4",
       "--chunk", "16", "--seed", "3"]


def check(condition, what, detail=""):
    if not condition:
        print(f"replay_test: FAILED: {what}\n{detail}")
        sys.exit(1)
    print(f"ok: {what}")


def sh(*args, cwd=None):
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def replay(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True)


def commit(repo, files, message):
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message, cwd=repo)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                          text=True).stdout.strip()


def entry(id_, fix, parent, **extra):
    e = {"id": id_, "fix": fix, "parent": parent, "pr": None, "title": id_, "date": "2026-01-01",
         "op": "gdn", "function": "fake", "files": ["fla/ops/fake.py"], "bug_class": "wrong-value",
         "mechanism": "test", "reaches_numbers": True,
         "trigger": {"gen": GEN, "precision": "f32", "why": "test"},
         "expect": {"buggy": "caught", "fixed": "green"}}
    e.update(extra)
    return e


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltaproof", default=str(ROOT / "build" / "bin" / "deltaproof"))
    args = parser.parse_args()
    deltaproof = str(pathlib.Path(args.deltaproof).resolve())

    result = replay("check")
    check(result.returncode == 0, "the committed corpus passes check", result.stdout + result.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        repo = tmp / "fla"
        repo.mkdir()
        sh("git", "init", "-q", cwd=repo)
        broken_ops = "import a_module_gone_from_today_s_torch\n"
        c0 = commit(repo, {"fla/__init__.py": "import fla.layers\n__version__ = 'old'\n",
                           "fla/layers/__init__.py": "import transformers_of_today\n",
                           "fla/ops/__init__.py": broken_ops,
                           "fla/ops/fake.py": "SCALE = 1.03\nRAISE = ''\n"}, "the scaling bug")
        c1 = commit(repo, {"fla/ops/fake.py": "SCALE = 1.0\nRAISE = ''\n"}, "fix the scaling")
        c2 = commit(repo, {"fla/ops/fake.py": "SCALE = 1.0\nRAISE = 'Triton: BK too large'\n"},
                    "the crash")
        c3 = commit(repo, {"fla/ops/fake.py": "SCALE = 1.0\nRAISE = ''\n"}, "fix the crash")
        c4 = commit(repo, {"fla/ops/fake.py": "SCALE = 0.9\nRAISE = ''\n"}, "a miscompile")
        c5 = commit(repo, {"fla/ops/fake.py": "SCALE = 0.9\nRAISE = 'refuses BK=64 here'\n"},
                    "a guard")
        packed_gen = [a for a in GEN if a not in ("--T", "20")]
        stub = {"file": "fla/ops/__init__.py", "old": "import a_module_gone_from_today_s_torch\n",
                "new": "", "why": "the module is gone; nothing of the kernel uses it"}
        corpus = {"schema": "deltaproof-real-bugs/1", "repository": str(repo), "entries": [
            entry("scaling", c1, c0, compat=[stub]),
            entry("crash", c3, c2, bug_class="crash", compat=[stub]),
            entry("guard", c5, c4, bug_class="miscompile", compat=[stub],
                  trigger={"gen": packed_gen, "packed": {"sequences": 4, "length": 5},
                           "precision": "f32", "why": "test"},
                  expect={"buggy": "caught", "fixed": "refused", "refusal": "refuses BK=64"})]}
        corpus_path = tmp / "corpus.json"
        corpus_path.write_text(json.dumps(corpus))

        out = tmp / "replay"
        result = replay("export", "--corpus", corpus_path, "--fla-git", repo, "--out", out)
        check(result.returncode == 0, "export writes both versions of both entries",
              result.stdout + result.stderr)
        import tarfile
        with tarfile.open(out / "trees.tar.xz") as t:
            names = set(t.getnames())
        check({f"{e}-{s}/fla/ops/fake.py" for e in ("scaling", "crash", "guard") for s in ("buggy", "fixed")}
              <= names and "manifest.json" in names, "one bundle holds every version")

        result = replay("run", "--corpus", corpus_path, "--trees", out / "trees.tar.xz", "--out", out,
                        "--deltaproof", deltaproof, "--candidate-command", FAKE, "--jobs", "2")
        check(result.returncode == 0, "run: every entry as expected (exit 0)",
              result.stdout + result.stderr)
        report = json.loads((out / "replay.json").read_text())
        scaling, crash, guard = report["entries"]
        b, f = scaling["sides"]["buggy"], scaling["sides"]["fixed"]
        check(b["verdict"] == "caught" and b["gate"]["verdict"] == "fail"
              and set(b["gate"]["red_terms"]) >= {"o", "ht", "dq"},
              "the 3% scaling is caught by the gate, o, ht and dq red", json.dumps(b, indent=1))
        check(f["verdict"] == "green" and f["gate"]["verdict"] == "pass", "its fix is green",
              json.dumps(f, indent=1))
        check(len(b["compat"]) == 2 and b["compat"][0]["file"] == "fla/__init__.py"
              and "__version__" in b["compat"][0]["why"],
              "the package stub (fla/__init__.py, no layers) is recorded first",
              json.dumps(b["compat"], indent=1))
        check(b["compat"][1]["file"] == "fla/ops/__init__.py"
              and b["compat"][1]["why"].startswith("the module is gone"),
              "the entry's compat edit is recorded in the report")
        cb = crash["sides"]["buggy"]
        check(cb["verdict"] == "caught" and cb["crash"]["kind"] == "raised"
              and "Triton: BK too large" in cb["crash"]["message"],
              "the crash is caught with the kernel's message", json.dumps(cb, indent=1))
        check(crash["sides"]["fixed"]["verdict"] == "green", "the crash's fix is green")
        check(guard["sides"]["buggy"]["verdict"] == "caught"
              and guard["sides"]["fixed"]["verdict"] == "refused"
              and guard["fixture"]["packed"] == {"sequences": 4, "length": 5},
              "a packed trigger (4 x 5 tokens) and a fix that is a guard: caught, then refused",
              json.dumps(guard, indent=1))
        result = replay("table", out / "replay.json")
        check(result.returncode == 0 and "| scaling (" in result.stdout
              and "raised: AssertionError: Triton: BK too large" in result.stdout,
              "table prints one row an entry with the evidence", result.stdout + result.stderr)

        # An entry whose expectation is wrong makes the run exit 1.
        wrong = copy.deepcopy(corpus)
        wrong["entries"] = [wrong["entries"][1]]
        wrong["entries"][0]["expect"]["buggy"] = "missed"
        (tmp / "wrong.json").write_text(json.dumps(wrong))
        result = replay("run", "--corpus", tmp / "wrong.json", "--trees", out / "trees.tar.xz", "--out",
                        tmp / "wrong", "--deltaproof", deltaproof, "--candidate-command", FAKE)
        check(result.returncode == 1 and "not as expected" in result.stdout,
              "an entry not as its expect says: exit 1", result.stdout + result.stderr)

        # Refusals.
        def refused(corpus_doc, what, needle, *extra):
            path = tmp / "bad.json"
            path.write_text(json.dumps(corpus_doc))
            r = replay(*(extra or ("export", "--fla-git", repo, "--out", tmp / "bad")),
                       "--corpus", path)
            check(r.returncode == 2 and needle in r.stderr, what, r.stdout + r.stderr)

        touching = copy.deepcopy(corpus)
        touching["entries"][0]["compat"].append(
            {"file": "fla/ops/fake.py", "old": "SCALE = 1.03\n", "new": "SCALE = 1.0\n",
             "sides": ["buggy"], "why": "would hide the bug"})
        refused(touching, "a compat edit touching a line the fix changes is refused",
                "may not touch the bug")
        absent = copy.deepcopy(corpus)
        absent["entries"][0]["compat"][0]["old"] = "import something_else\n"
        refused(absent, "a compat edit whose `old` is not in the file is refused",
                "occurs 0 times")
        bad_hash = copy.deepcopy(corpus)
        bad_hash["entries"][0]["fix"] = "91d870f8"
        refused(bad_hash, "a short commit hash breaks the schema, the field named",
                "entries/0/fix")
        refused(corpus, "an unknown id is refused, the known ones listed", "unknown entry id",
                "export", "--fla-git", repo, "--out", tmp / "bad", "--ids", "nope")
    print("replay_test: all checks pass")


if __name__ == "__main__":
    main()
