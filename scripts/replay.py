#!/usr/bin/env python3
"""Replay real bugs of flash-linear-attention (FLA) through deltaproof's gates.

"Had I run deltaproof on that FLA version, would it have told me?" Each entry of
the corpus (falsify/real-bugs.json, schema reports/schema/real-bugs-v1.schema.json)
names a fix commit of FLA, its parent (where the bug lives), the kernel, the bug
class, and the trigger: the `deltaproof gen` arguments of a fixture that reaches
the buggy path, the class it is judged in, and the sanitizers to run. Both
versions run through examples/fla_candidate.py and `deltaproof gate check`; the
report (reports/schema/replay-v1.schema.json) holds both verdicts. docs/REAL_BUGS.md
has the table.

    # here, where FLA's git history is (a clone, or the search tool's fetched mirror):
    python3 scripts/replay.py check                        # the corpus against its schema
    python3 scripts/replay.py export --fla-git FLA.git --out .replay [--ids ID...]
    # on a machine with a GPU, torch and triton (the trees travel as .replay/trees.tar.xz):
    python3 scripts/replay.py run --trees .replay/trees.tar.xz --out OUT [--ids ID...] [--jobs 8] \
        [--sanitize memcheck] [--budget 540] [--full-autotune]
    python3 scripts/replay.py table OUT/replay.json        # the markdown table

`export` writes each version's fla/ package into one bundle with the entry's
compatibility edits applied (the smallest change that lets an old version import
or compile on today's torch and Triton). An edit must match its file exactly
once and may not touch a line the fix changes: both are checked, and each edit
is recorded in the report. `run` generates each fixture once (deterministic: the
same arguments make the same bytes anywhere), runs both versions (Triton's
autotuners cut to their first config unless --full-autotune: same math, only the
tiling differs), gates each candidate, and runs the entry's sanitizers
(compute-sanitizer memcheck / initcheck over the candidate's script) when asked.

Verdicts. On the buggy version: `caught` when the gate is red, when the kernel
raised while it ran (fla_candidate.py exits 3 and quotes the kernel's message),
when the process died on a signal, or when a sanitizer reported an error;
`missed` when the gate is green and no sanitizer spoke; `error` when the
replay itself could not run it (an import that fails, a timeout, no fixture).
On the fixed version: `green`, `red` (with the same evidence) or `error`.
Exit codes: 0 every entry run as its `expect` says, 1 otherwise, 2 usage or a
corpus/input error.
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "falsify", "real-bugs.json")
CORPUS_SCHEMA = os.path.join(ROOT, "reports", "schema", "real-bugs-v1.schema.json")
REPORT_SCHEMA = os.path.join(ROOT, "reports", "schema", "replay-v1.schema.json")
CANDIDATE = os.path.join(ROOT, "examples", "fla_candidate.py")
SIDES = ("buggy", "fixed")
KERNEL_RAISED = 3  # fla_candidate.py's exit code when the kernel itself raised


class ReplayError(Exception):
    """A problem with the corpus, a tree or an input: a sentence the user can act on."""


# ---------------------------------------------------------------------------- corpus

def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ReplayError(f"{path}: cannot read the {what} ({e.strerror})")
    except json.JSONDecodeError as e:
        raise ReplayError(f"{path}: the {what} is not JSON ({e.msg} at line {e.lineno})")


def validate(document, schema_path, path, what):
    """Schema validation (jsonschema, from PyPI); the message names the file and the field."""
    try:
        import jsonschema
    except ImportError:
        raise ReplayError("jsonschema is not installed (pip install jsonschema)")
    schema = load_json(schema_path, "schema")
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(document),
                    key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise ReplayError(f"{path}: the {what} breaks its schema at {where}: {e.message}"
                          + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))


def load_corpus(path):
    corpus = load_json(path, "corpus")
    validate(corpus, CORPUS_SCHEMA, path, "corpus")
    seen = set()
    for entry in corpus["entries"]:
        if entry["id"] in seen:
            raise ReplayError(f"{path}: entry id {entry['id']!r} appears twice")
        seen.add(entry["id"])
        gen = entry["trigger"]["gen"]
        for flag in ("--out", "--overwrite", "--threads"):
            if flag in gen:
                raise ReplayError(f"{path}: entry {entry['id']}: trigger.gen sets {flag}; "
                                  "the replay chooses it")
        if "--op" not in gen or gen[gen.index("--op") + 1] != entry["op"]:
            raise ReplayError(f"{path}: entry {entry['id']}: trigger.gen must say --op {entry['op']}")
    return corpus


def select(corpus, ids):
    entries = corpus["entries"]
    if not ids:
        return entries
    known = {e["id"] for e in entries}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ReplayError(f"unknown entry id(s) {', '.join(unknown)}; the corpus has: "
                          + ", ".join(sorted(known)))
    return [e for e in entries if e["id"] in ids]


def gen_args(entry):
    """The entry's `deltaproof gen` arguments, with `packed` written out as --cu-seqlens."""
    trigger = entry["trigger"]
    args = list(trigger["gen"])
    if "packed" in trigger:
        n, length = trigger["packed"]["sequences"], trigger["packed"]["length"]
        args += ["--T", str(n * length),
                 "--cu-seqlens", ",".join(str(i * length) for i in range(n + 1))]
    return args


def fixture_key(entry):
    """One fixture file per distinct gen command (entries may share one)."""
    return hashlib.sha256("\0".join(gen_args(entry)).encode()).hexdigest()[:16]


def tree_name(entry, side):
    return f"{entry['id']}-{side}"


# ---------------------------------------------------------------------------- export

def git(fla_git, *args, binary=False):
    result = subprocess.run(["git", "--git-dir", fla_git, *args], capture_output=True)
    if result.returncode != 0:
        raise ReplayError(f"git {' '.join(args)} in {fla_git} failed: "
                          f"{result.stderr.decode(errors='replace').strip()}")
    return result.stdout if binary else result.stdout.decode()


def resolve_git_dir(path):
    for candidate in (path, os.path.join(path, ".git")):
        if os.path.isfile(os.path.join(candidate, "HEAD")) and os.path.isdir(
                os.path.join(candidate, "objects")):
            return candidate
    raise ReplayError(f"{path}: not a git repository (neither it nor {path}/.git holds HEAD "
                      "and objects)")


def changed_lines(fla_git, entry):
    """Per file, the text of every line the fix removes or adds (stripped)."""
    diff = git(fla_git, "diff", "--unified=0", entry["parent"], entry["fix"], "--", "fla")
    lines, current = {}, None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("--- "):
            continue
        elif current and line[:1] in "+-" and line[1:].strip():
            lines.setdefault(current, set()).add(line[1:].strip())
    return lines


def apply_edits(tree, entry, side, fix_lines):
    """Applies the entry's compatibility edits for one side; returns what was applied."""
    applied = []
    for edit in entry.get("compat", []):
        if side not in edit.get("sides", SIDES):
            continue
        path = os.path.join(tree, edit["file"])
        where = f"entry {entry['id']} ({side}): compat edit of {edit['file']}"
        if not os.path.isfile(path):
            raise ReplayError(f"{where}: the file is not in this version's tree")
        with open(path) as f:
            text = f.read()
        if edit.get("replace_file"):
            new_text = edit["new"]
        else:
            count = text.count(edit["old"])
            if count != 1:
                raise ReplayError(f"{where}: `old` occurs {count} times (it must occur once): "
                                  f"{edit['old'][:80]!r}")
            new_text = text.replace(edit["old"], edit["new"])
        touched = {line.strip() for line in text.splitlines()} - {
            line.strip() for line in new_text.splitlines()}
        overlap = touched & fix_lines.get(edit["file"], set())
        if overlap:
            raise ReplayError(f"{where}: the edit changes a line the fix changes "
                              f"({sorted(overlap)[0][:80]!r}): a compat edit may not touch the bug")
        with open(path, "w") as f:
            f.write(new_text)
        applied.append({"file": edit["file"], "why": edit["why"],
                        "lines_removed": len(touched),
                        "sha256_after": hashlib.sha256(new_text.encode()).hexdigest()})
    return applied


PACKAGE_STUB = ("fla/__init__.py", "the replay imports only fla.ops: fla/__init__.py (which imports "
                "every layer and model, and through them transformers) is replaced by __version__ "
                "alone, and fla/layers and fla/models are left out; no kernel is touched")


def stub_package(tree):
    """fla/__init__.py down to its __version__; fla/layers and fla/models dropped."""
    init = os.path.join(tree, "fla", "__init__.py")
    with open(init) as f:
        version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
    with open(init, "w") as f:
        f.write(f"__version__ = {(version.group(1) if version else 'unknown')!r}\n")
    for folder in ("layers", "models"):
        shutil.rmtree(os.path.join(tree, "fla", folder), ignore_errors=True)
    return {"file": PACKAGE_STUB[0], "why": PACKAGE_STUB[1], "lines_removed": None,
            "sha256_after": sha256_file(init)}


def export(args):
    """Both versions of each entry as one bundle, trees.tar.xz: NAME/fla/... for each
    ENTRY-buggy and ENTRY-fixed, and manifest.json (commits, compat edits). The
    files are ordered by their path inside fla/, so that xz stores a file the
    versions share once (24 versions of fla/ops: 50 MB, 0.6 MB packed)."""
    corpus = load_corpus(args.corpus)
    fla_git = resolve_git_dir(args.fla_git)
    os.makedirs(args.out, exist_ok=True)
    manifest = {"corpus_sha256": sha256_file(args.corpus), "trees": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for entry in select(corpus, args.ids):
            if git(fla_git, "rev-parse", f"{entry['fix']}^").strip() != entry["parent"]:
                raise ReplayError(f"entry {entry['id']}: parent {entry['parent'][:10]} is not "
                                  f"the first parent of {entry['fix'][:10]}")
            fix_lines = changed_lines(fla_git, entry)
            if not fix_lines:
                raise ReplayError(f"entry {entry['id']}: the fix {entry['fix'][:10]} changes "
                                  "nothing under fla/ against its parent")
            for side in SIDES:
                commit = entry["parent"] if side == "buggy" else entry["fix"]
                name = tree_name(entry, side)
                tree = os.path.join(scratch, name)
                archive = git(fla_git, "archive", "--format=tar", commit, "fla", binary=True)
                with tarfile.open(fileobj=io.BytesIO(archive)) as t:
                    t.extractall(tree, filter="data")
                applied = [stub_package(tree)] + apply_edits(tree, entry, side, fix_lines)
                manifest["trees"][name] = {"commit": commit, "compat": applied}
                print(f"export {name}: {commit[:10]}, {len(applied) - 1} compat edit(s) "
                      "beside the package stub")
        with open(os.path.join(scratch, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        bundle = os.path.join(args.out, "trees.tar.xz")
        write_atomically(bundle, lambda f: pack_bundle(scratch, f), binary=True)
    print(f"wrote {bundle} ({os.path.getsize(bundle) / 1e6:.2f} MB, "
          f"{len(manifest['trees'])} trees)")
    return 0


def pack_bundle(scratch, f):
    files = []
    for name in sorted(os.listdir(scratch)):
        folder = os.path.join(scratch, name)
        if not os.path.isdir(folder):
            continue
        for dirpath, _, filenames in os.walk(folder):
            for filename in filenames:
                full = os.path.join(dirpath, filename)
                inner = os.path.relpath(full, folder)
                files.append((inner, name, full))
    with tarfile.open(fileobj=f, mode="w:xz", preset=9) as t:
        t.add(os.path.join(scratch, "manifest.json"), arcname="manifest.json")
        for inner, name, full in sorted(files):
            t.add(full, arcname=f"{name}/{inner}")


# ---------------------------------------------------------------------------- run

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_atomically(path, write, binary=False):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def run_logged(command, log, timeout, env=None):
    """Runs a command with its output in `log`; returns (exit, seconds). -9: timed out."""
    start = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + " ".join(command) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, env=env,
                                 cwd=ROOT, start_new_session=True)
            code = p.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            code = "timeout"
    return code, round(time.monotonic() - start, 3)


def tail(path, lines=12):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def kernel_message(log):
    """The kernel's own words: fla_candidate's quote of the exception, else the last error line."""
    text = tail(log, 200)
    quoted = re.findall(r"^fla_candidate: the kernel raised (.*)$", text, re.M)
    if quoted:
        return quoted[-1]
    errors = [l for l in text.splitlines() if re.search(r"Error|error:|Exception|Traceback", l)]
    return errors[-1].strip() if errors else text.strip().splitlines()[-1:] and text.strip().splitlines()[-1]


def gate_summary(report_path):
    report = load_json(report_path, "gate report")
    gate = report["gates"][0]
    terms = []
    for term in gate["terms"]:
        noise = term.get("noise") or {}
        terms.append({"term": term["term"], "status": term["status"], "rel": term["rel"],
                      "bar": term["bar"], "non_finite": term.get("non_finite", 0),
                      "alpha": noise.get("alpha"), "bias_where": noise.get("bias_where", ""),
                      "message": term.get("message", "")})
    return {"verdict": gate["verdict"], "phase": gate.get("phase", ""),
            "reasons": gate.get("reasons", []), "terms": terms,
            "red_terms": [t["term"] for t in terms if t["status"] != "pass"]}


def sanitize_summary(log, tool):
    text = tail(log, 400)
    summary = re.findall(r"ERROR SUMMARY: (\d+) error", text)
    first = re.search(r"^=+ (?:Invalid|Uninitialized|Race|Barrier|Program hit|.*[Ee]rror).*$",
                      text, re.M)
    return {"tool": tool, "errors": int(summary[-1]) if summary else None,
            "first_error": first.group(0).strip("= ").strip() if first else ""}


def compute_sanitizer():
    found = shutil.which("compute-sanitizer")
    for candidate in (found, "/usr/local/cuda/bin/compute-sanitizer"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ReplayError("compute-sanitizer is not on PATH nor in /usr/local/cuda/bin")


class Runner:
    def __init__(self, args, corpus):
        self.args = args
        self.corpus = corpus
        self.out = os.path.abspath(args.out)
        self.work = os.path.abspath(args.work or os.path.join(args.out, "work"))
        self.deadline = time.monotonic() + args.budget
        self.deltaproof = os.path.abspath(args.deltaproof)
        for sub in ("fixtures", "trees", "candidates", "reports", "logs"):
            os.makedirs(os.path.join(self.work, sub), exist_ok=True)
        self.trees = self.path("trees", "")
        if not os.path.isfile(args.trees):
            raise ReplayError(f"{args.trees}: no tree bundle (run `replay.py export` first)")
        with tarfile.open(args.trees) as t:
            t.extractall(self.trees, filter="data")
        self.manifest = load_json(os.path.join(self.trees, "manifest.json"),
                                  "tree manifest")["trees"]

    def left(self, reserve=30):
        return self.deadline - time.monotonic() - reserve

    def path(self, sub, name):
        return os.path.join(self.work, sub, name)

    def fixture(self, entry):
        key = fixture_key(entry)
        path = self.path("fixtures", f"{entry['op']}-{key}.safetensors")
        if not os.path.isfile(path):
            command = [self.deltaproof, "gen", *gen_args(entry), "--threads",
                       str(self.args.gen_threads), "--overwrite", "--out", path]
            code, seconds = run_logged(command, self.path("logs", f"gen-{key}.txt"), self.left())
            if code != 0:
                return {"path": path, "error": f"gen exit {code} after {seconds} s: "
                        + tail(self.path("logs", f"gen-{key}.txt"), 3).strip()}
        return {"path": path, "sha256": sha256_file(path), "gen": entry["trigger"]["gen"],
                **({"packed": entry["trigger"]["packed"]} if "packed" in entry["trigger"] else {})}

    def tree(self, entry, side):
        name = tree_name(entry, side)
        folder = self.path("trees", name)
        if name not in self.manifest or not os.path.isdir(os.path.join(folder, "fla")):
            raise ReplayError(f"{self.args.trees}: no tree {name} in the bundle (export it)")
        return folder

    def candidate_command(self, entry, fixture, out):
        if self.args.candidate_command:  # tests: a stand-in for fla_candidate.py
            return [sys.executable, self.args.candidate_command, fixture, "--out", out]
        command = [sys.executable, CANDIDATE, fixture, "--out", out,
                   "--phase", entry["trigger"].get("phase", "bwd"),
                   *entry["trigger"].get("candidate", [])]
        if not self.args.full_autotune:
            command.append("--first-config")
        return command

    def side(self, entry, side, fixture):
        name = tree_name(entry, side)
        record = {"commit": entry["parent"] if side == "buggy" else entry["fix"],
                  "compat": self.manifest.get(name, {}).get("compat", [])}
        try:
            tree = self.tree(entry, side)
        except ReplayError as e:
            record.update(verdict="error", error=str(e))
            return record
        env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1")
        env.setdefault("TRITON_CACHE_DIR", self.path("trees", ".triton-cache"))
        candidate = self.path("candidates", name + ".safetensors")
        if os.path.exists(candidate):
            os.unlink(candidate)
        log = self.path("logs", f"fla-{name}.txt")
        code, seconds = run_logged(self.candidate_command(entry, fixture, candidate), log,
                                   min(self.args.timeout, self.left()), env)
        record["candidate"] = {"exit": code, "seconds": seconds, "log_tail": tail(log, 6)}
        if code == 0 and os.path.isfile(candidate):
            report = self.path("reports", name + ".json")
            trigger = entry["trigger"]
            gate_log = self.path("logs", f"gate-{name}.txt")
            gcode, gseconds = run_logged(
                [self.deltaproof, "gate", "check", "--fixture", fixture, "--candidate", candidate,
                 "--precision", trigger["precision"], "--phase", trigger.get("phase", "bwd"),
                 "--report", report], gate_log, self.left())
            if gcode in (0, 1) and os.path.isfile(report):
                record["gate"] = dict(gate_summary(report), exit=gcode, seconds=gseconds,
                                      report=os.path.relpath(report, self.work))
            else:
                record["gate"] = {"verdict": "error", "exit": gcode,
                                  "message": tail(gate_log, 4).strip()}
        elif code == KERNEL_RAISED:
            record["crash"] = {"kind": "raised", "message": kernel_message(log)}
        elif isinstance(code, int) and code < 0:
            record["crash"] = {"kind": "signal", "message":
                               f"killed by {signal.Signals(-code).name}: {kernel_message(log)}"}
        else:
            record["error"] = (f"fla_candidate.py exit {code} after {seconds} s: "
                               f"{kernel_message(log)}")
        tools = entry.get("sanitize", []) if self.args.sanitize is None else self.args.sanitize
        record["sanitizers"] = [self.sanitize(entry, name, fixture, tool, env) for tool in tools
                                if self.left() > 60]
        record["verdict"] = side_verdict(side, record, entry["expect"].get("refusal"))
        return record

    def sanitize(self, entry, name, fixture, tool, env):
        out = self.path("candidates", f"{name}-{tool}.safetensors")
        log = self.path("logs", f"{tool}-{name}.txt")
        # Without the caching allocator every tensor is its own allocation, so a read past
        # a tensor's end lands outside any allocation, where memcheck sees it.
        env = dict(env, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
        command = [compute_sanitizer(), "--tool", tool, "--target-processes", "all",
                   "--print-limit", "20", "--error-exitcode", "86",
                   *self.candidate_command(entry, fixture, out)]
        code, seconds = run_logged(command, log, min(self.args.sanitize_timeout, self.left()), env)
        return dict(sanitize_summary(log, tool), exit=code, seconds=seconds)

    def entry(self, entry):
        started = time.monotonic()
        result = {"id": entry["id"], "fix": entry["fix"], "parent": entry["parent"],
                  "op": entry["op"], "function": entry["function"],
                  "bug_class": entry["bug_class"], "expect": entry["expect"],
                  "precision": entry["trigger"]["precision"]}
        fixture = self.fixture(entry)
        result["fixture"] = {k: (os.path.relpath(v, self.work) if k == "path" else v)
                             for k, v in fixture.items()}
        if "error" in fixture:
            result["sides"] = {s: {"commit": result["parent" if s == "buggy" else "fix"],
                                   "compat": [], "verdict": "error", "error": fixture["error"]}
                               for s in SIDES}
        else:
            result["sides"] = {s: self.side(entry, s, fixture["path"]) for s in SIDES}
        result["seconds"] = round(time.monotonic() - started, 3)
        result["as_expected"] = (result["sides"]["buggy"]["verdict"] == entry["expect"]["buggy"]
                                 and result["sides"]["fixed"]["verdict"] == entry["expect"]["fixed"])
        print(f"{entry['id']}: buggy {result['sides']['buggy']['verdict']}, fixed "
              f"{result['sides']['fixed']['verdict']} ({result['seconds']:.0f} s)"
              f"{'' if result['as_expected'] else '  <- not as expected'}", flush=True)
        return result


def side_verdict(side, record, refusal=None):
    """caught / missed for the buggy version; green / red for the fixed one, or refused when
    it raised a message that matches the entry's `refusal` (the fix is a guard)."""
    crash = record.get("crash", {})
    if (side == "fixed" and refusal and crash.get("kind") == "raised"
            and re.search(refusal, crash.get("message", ""))):
        return "refused"
    evidence = bool(record.get("crash")) or (record.get("gate", {}).get("verdict") == "fail") or any(
        (s.get("errors") or 0) > 0 for s in record.get("sanitizers", []))
    ran = "gate" in record and record["gate"].get("verdict") in ("pass", "fail") or "crash" in record
    if not ran:
        return "error"
    if side == "buggy":
        return "caught" if evidence else "missed"
    return "red" if evidence else "green"


def run(args):
    corpus = load_corpus(args.corpus)
    entries = select(corpus, args.ids)
    if not os.path.isfile(args.deltaproof):
        raise ReplayError(f"{args.deltaproof}: no deltaproof binary (build it, or pass --deltaproof)")
    runner = Runner(args, corpus)
    start = time.monotonic()
    # Fixtures first, in parallel (each gen uses --gen-threads cores), then the entries.
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        unique = {fixture_key(e): e for e in entries}
        list(pool.map(runner.fixture, unique.values()))
        results = list(pool.map(runner.entry, entries))
    report = {
        "schema": "deltaproof-replay/1",
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["scripts/replay.py", *sys.argv[1:]]),
        "git_commit": git_commit(),
        "corpus_sha256": sha256_file(args.corpus),
        "autotune": "full" if args.full_autotune else "first-config",
        "environment": environment(),
        "seconds": round(time.monotonic() - start, 3),
        "entries": results,
    }
    validate(report, REPORT_SCHEMA, "replay report", "report")
    os.makedirs(runner.out, exist_ok=True)
    path = os.path.join(runner.out, "replay.json")
    write_atomically(path, lambda f: json.dump(report, f, indent=1))
    print(f"report: {path}")
    print(table(report))
    return 0 if all(r["as_expected"] for r in results) else 1


def git_commit():
    if os.environ.get("DELTAPROOF_GIT_COMMIT"):
        return os.environ["DELTAPROOF_GIT_COMMIT"] + " (from DELTAPROOF_GIT_COMMIT)"
    result = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True)
    return result.stdout.strip() or "unknown"


def environment():
    probe = ("import sys, json\nout = {'python': sys.version.split()[0]}\n"
             "for m in ('torch', 'triton'):\n"
             "    try:\n        out[m] = __import__(m).__version__\n"
             "    except Exception as e:\n        out[m] = 'absent'\n"
             "try:\n    import torch\n    out['device'] = torch.cuda.get_device_name() "
             "if torch.cuda.is_available() else 'no CUDA device'\n"
             "except Exception:\n    out['device'] = 'no CUDA device'\nprint(json.dumps(out))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        return {"python": sys.version.split()[0]}


# ---------------------------------------------------------------------------- table

def evidence(side):
    """The catching gate's terms with rel / bar, or the crash, or the sanitizer's finding."""
    parts = []
    gate = side.get("gate", {})
    for term in gate.get("terms", []):
        # a gradient left uncompared because its output is not finite adds nothing
        if term["status"] not in ("pass", "not-compared"):
            nonfinite = f", {term['non_finite']} non-finite" if term["non_finite"] else ""
            ratio = (f"{term['rel'] / term['bar']:.3g}x bar" if term["rel"] is not None
                     and term["bar"] else "n/a")
            parts.append(f"{term['term']} {term['status']} ({ratio}{nonfinite})")
    if "crash" in side:
        parts.append(f"{side['crash']['kind']}: {side['crash']['message'][:120]}")
    for s in side.get("sanitizers", []):
        if s.get("errors"):
            parts.append(f"{s['tool']}: {s['errors']} error(s), {s['first_error'][:80]}")
    if not parts and gate.get("terms"):
        worst = max(gate["terms"], key=lambda t: (t["rel"] or 0) / (t["bar"] or 1))
        parts.append(f"worst {worst['term']} {worst['rel'] / worst['bar']:.2f}x bar")
    if "error" in side:
        parts.append(side["error"][:160])
    return "; ".join(parts) or "-"


def table(report):
    rows = ["| bug | op | class | buggy | evidence (buggy) | fixed | evidence (fixed) |",
            "|---|---|---|---|---|---|---|"]
    for r in report["entries"]:
        b, f = r["sides"]["buggy"], r["sides"]["fixed"]
        rows.append(f"| {r['id']} ({r['fix'][:8]}) | {r['op']} | {r['bug_class']} | "
                    f"{b['verdict']} | {evidence(b)} | {f['verdict']} | {evidence(f)} |")
    return "\n".join(rows)


def print_table(args):
    report = load_json(args.report, "replay report")
    validate(report, REPORT_SCHEMA, args.report, "report")
    print(table(report))
    return 0


def check(args):
    corpus = load_corpus(args.corpus)
    n = len(corpus["entries"])
    numerical = sum(1 for e in corpus["entries"] if e["reaches_numbers"])
    print(f"{args.corpus}: {n} entries ({numerical} reach a numerical result), schema and "
          "consistency checks pass")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="validate the corpus")
    p.add_argument("--corpus", default=CORPUS)
    p.set_defaults(func=check)
    p = sub.add_parser("export", help="each entry's parent and fix as fla/ trees (tar.gz)")
    p.add_argument("--corpus", default=CORPUS)
    p.add_argument("--fla-git", required=True, help="FLA's git directory (or a clone)")
    p.add_argument("--out", required=True)
    p.add_argument("--ids", nargs="*")
    p.set_defaults(func=export)
    p = sub.add_parser("run", help="replay entries on a GPU machine")
    p.add_argument("--corpus", default=CORPUS)
    p.add_argument("--trees", required=True, help="the bundle export wrote (trees.tar.xz)")
    p.add_argument("--out", required=True, help="where replay.json goes")
    p.add_argument("--work", help="fixtures, candidates, reports and logs (default OUT/work)")
    p.add_argument("--ids", nargs="*")
    p.add_argument("--deltaproof", default=os.path.join(ROOT, "build", "bin", "deltaproof"))
    p.add_argument("--jobs", type=int, default=8, help="entries at once")
    p.add_argument("--gen-threads", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300, help="seconds a candidate run may take")
    p.add_argument("--sanitize", nargs="*", choices=["memcheck", "initcheck"],
                   help="sanitizers for every entry (default: each entry's own list)")
    p.add_argument("--sanitize-timeout", type=float, default=400)
    p.add_argument("--budget", type=float, default=540, help="seconds for the whole run")
    p.add_argument("--full-autotune", action="store_true")
    p.add_argument("--candidate-command", help=argparse.SUPPRESS)  # tests: a stand-in script
    p.set_defaults(func=run)
    p = sub.add_parser("table", help="the markdown table of a replay report")
    p.add_argument("report")
    p.set_defaults(func=print_table)
    args = parser.parse_args()
    try:
        return args.func(args)
    except ReplayError as e:
        print(f"replay: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
