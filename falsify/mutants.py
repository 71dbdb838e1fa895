#!/usr/bin/env python3
"""falsify/mutants.py — the mutants of a kernel source, found with a real C++
parser (libclang, Debian's python3-clang), and the file rewritten as mutant
schemata: every mutant compiled in, each behind DELTAPROOF_MUTANT(id), one
switched on at run time (kernels/mutants.hpp).

  python3 falsify/mutants.py list   FILE... --compile-commands build/compile_commands.json
                                    [--operators arith,relational,...] [--first-id N]
  python3 falsify/mutants.py schema FILE --mutants mutants.json --out FILE.schemata.cpp
  python3 falsify/mutants.py errors --lines FILE.schemata.cpp.lines.json [--log FILE] < compiler-output

`list` prints a JSON array, one object per mutant: id, file, operator, line,
column (1-based, of the edit), offset and length of the edit in the file, the
original text there and its replacement, the enclosing function, and how the
schemata hold it ("expression": a ternary around a builtin-typed expression;
"statement": the enclosing statement duplicated). A mutant the schemata cannot
hold (an Eigen-typed expression in a declaration without a named type, say) is
listed with "schema": null: it can still be built alone.

Operators (the standard ones and the ones this domain needs):
  arith       + and -, * and /, += and -=, *= and /= (any type: Eigen's too)
  relational  < and <=, > and >=, == and != (the boundary of every mask)
  bound       a for loop's bound, plus or minus one
  index       an index plus or minus one: a[i], A(i, j), A.row(i), A.middleRows(s, n) ...
  constant    a literal replaced by 0 and 1, an integer by n + 1 and n - 1
  unary       a negation dropped; ! dropped; exp and exp2 swapped; an exp dropped
  delete      an expression statement deleted: an accumulation, a store, a call
              (__syncthreads() among them)
  swap        the two indices of a 2-D access swapped: A(i, j) -> A(j, i)
  step        (opt-in) a for loop's step deleted: ++i -> i += 0, a hang (Timeout)
Code under a fault point (DELTAPROOF_FAULT: off in a normal build) and inside
macros is left alone.
"""
import argparse
import json
import os
import re
import shlex
import sys
import tempfile

import glob

try:  # `schema` and `errors` need no parser: a machine without libclang runs them
    import clang.cindex as ci
except ImportError:
    ci = None


_libclang_found = False


def _find_libclang():
    """The bindings look for libclang.so; Debian installs it versioned."""
    global _libclang_found
    if _libclang_found:
        return
    _libclang_found = True
    if ci is None:
        raise SystemExit("libclang's Python bindings are missing: install python3-clang "
                         "(scripts/setup.sh does)")
    try:
        ci.Index.create()
    except ci.LibclangError:
        found = sorted(glob.glob("/usr/lib/llvm-*/lib/libclang*.so*"))
        if not found:
            raise SystemExit("libclang not found: install libclang1-14 (scripts/setup.sh does)")
        ci.Config.set_library_file(found[-1])

OPERATORS = ["arith", "relational", "bound", "index", "constant", "unary", "delete", "swap"]
# not in the default set: every reached one hangs, so each costs a whole timeout
OPT_IN = ["step"]

ARITH_SWAP = {"+": "-", "-": "+", "*": "/", "/": "*",
              "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*="}
RELATIONAL_SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
INDEX_CALLS = {"row", "col", "middleRows", "middleCols", "segment", "head", "tail",
               "topRows", "bottomRows", "leftCols", "rightCols", "block", "coeff", "coeffRef"}
EXP_SWAP = {"exp": "exp2", "exp2": "exp", "expf": "exp2f", "exp2f": "expf"}
BUILTIN = set() if ci is None else {
    ci.TypeKind.BOOL, ci.TypeKind.INT, ci.TypeKind.UINT, ci.TypeKind.LONG, ci.TypeKind.ULONG,
    ci.TypeKind.LONGLONG, ci.TypeKind.ULONGLONG, ci.TypeKind.SHORT, ci.TypeKind.USHORT,
    ci.TypeKind.CHAR_S, ci.TypeKind.UCHAR, ci.TypeKind.FLOAT, ci.TypeKind.DOUBLE,
    ci.TypeKind.LONGDOUBLE}
INTEGRAL = set() if ci is None else BUILTIN - {
    ci.TypeKind.FLOAT, ci.TypeKind.DOUBLE, ci.TypeKind.LONGDOUBLE, ci.TypeKind.BOOL}


def _cuda_shim():
    """A folder holding the headers clang 14's CUDA wrapper includes and CUDA 12
    removed (texture fetches: no kernel here uses them), empty."""
    folder = os.path.join(tempfile.gettempdir(), "deltaproof-cuda-shim")
    os.makedirs(folder, exist_ok=True)
    for name in ("texture_fetch_functions.h", "texture_indirect_functions.h"):
        open(os.path.join(folder, name), "a").close()
    return folder


def compile_args(compile_commands, path):
    """The flags the build compiles `path` with (a header: those of any .cpp;
    nvcc's response files read too). A .cu parses as CUDA for sm_80, the newest
    clang 14 knows, with the texture headers shimmed."""
    entries = json.load(open(compile_commands))
    path = os.path.realpath(path)
    entry = next((e for e in entries if os.path.realpath(e["file"]) == path),
                 next(e for e in entries if e["file"].endswith(".cpp")))
    words = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    args, i = [], 1
    while i < len(words):
        w = words[i]
        if w == "--options-file" and i + 1 < len(words):
            rsp = os.path.join(entry.get("directory", ""), words[i + 1])
            words[i + 2:i + 2] = shlex.split(open(rsp).read()) if os.path.exists(rsp) else []
            i += 2
            continue
        if w in ("-isystem", "-I", "-D", "-include") and i + 1 < len(words):
            args += [w, words[i + 1]]
            i += 2
            continue
        if w.startswith(("-I", "-D", "-std", "-isystem")):
            args.append(w)
        i += 1
    if path.endswith((".hpp", ".h")):
        args += ["-x", "c++"]
    if path.endswith((".cu", ".cuh")):
        args += ["-x", "cuda", "--cuda-gpu-arch=sm_80", "-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__",
                 "-I", _cuda_shim()]
    return args + ["-Wno-everything"]


class Site:
    """A mutant: one edit (offset, length, replacement) in the file."""

    def __init__(self, operator, start, length, original, replacement, node, holder):
        self.operator, self.start, self.length = operator, start, length
        self.original, self.replacement = original, replacement
        self.node, self.holder = node, holder  # holder: the node the schemata wrap
        self.function = ""  # the enclosing function, set by the walk


class Finder:
    def __init__(self, path, args, operators):
        self.path = os.path.realpath(path)
        self.text = open(self.path, "rb").read()  # bytes: libclang's offsets count bytes
        self.operators = set(operators)
        _find_libclang()
        index = ci.Index.create()
        self.tu = index.parse(self.path, args=args,
                              options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
        errors = [d for d in self.tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            raise SystemExit(f"{path}: libclang could not parse it: {errors[0]}")
        self.sites = []

    # ---- source helpers ----
    def span(self, node):
        return node.extent.start.offset, node.extent.end.offset

    def source(self, node):
        a, b = self.span(node)
        return self.text[a:b].decode()

    def in_file(self, node):
        f = node.location.file
        return f is not None and os.path.realpath(f.name) == self.path

    def from_macro(self, node):
        """A node whose text does not start where its tokens say (a macro
        expansion) or that names one of ours."""
        a, b = self.span(node)
        if b <= a:
            return True
        text = self.text[a:b].decode()
        return "DELTAPROOF_" in text or "assert" in text

    def token_between(self, node, left, right, spellings=None):
        """The punctuation token of `node` between operands `left` and
        `right` (one of `spellings` when given), as (spelling, offset)."""
        left_end, right_start = left.extent.end.offset, right.extent.start.offset
        for token in node.get_tokens():
            o = token.extent.start.offset
            if left_end <= o < right_start and token.kind == ci.TokenKind.PUNCTUATION \
                    and (spellings is None or token.spelling in spellings):
                return token.spelling, o
        return None

    def operator_token(self, node):
        """A builtin binary operator's token."""
        children = list(node.get_children())
        return self.token_between(node, *children) if len(children) == 2 else None

    def builtin(self, node):
        return node.type.get_canonical().kind in BUILTIN

    def integral(self, node):
        return node.type.get_canonical().kind in INTEGRAL

    def add(self, operator, start, length, replacement, node, holder):
        if operator not in self.operators:
            return
        original = self.text[start:start + length].decode()
        if original == replacement:
            return
        self.sites.append(Site(operator, start, length, original, replacement, node, holder))

    def holder(self, node, stack):
        """Where the schemata put a mutant of `node`, as (kind, node):
        ("expression", node) when its type is builtin (a ternary around it);
        ("initializer", the variable) when it sits in the initializer of a
        variable whose type is named (T x = M ? T(mutated) : T(original));
        ("statement", the statement) when it sits in an expression statement
        or a return (the statement duplicated); else None."""
        if self.builtin(node) and node.kind.is_expression():
            return ("expression", node)
        for parent in reversed(stack):
            k = parent.kind
            if k == ci.CursorKind.VAR_DECL:
                declared = self.text[parent.extent.start.offset:
                                     parent.location.offset].decode()
                if "auto" in declared.split() or "&" in declared:
                    return None
                return ("initializer", parent)
            if k == ci.CursorKind.RETURN_STMT:
                return ("statement", parent)
            if k in (ci.CursorKind.COMPOUND_STMT, ci.CursorKind.FOR_STMT, ci.CursorKind.IF_STMT,
                     ci.CursorKind.WHILE_STMT, ci.CursorKind.DECL_STMT):
                # an expression statement: the child of the block on the way down
                index = stack.index(parent)
                if k == ci.CursorKind.COMPOUND_STMT and index + 1 < len(stack):
                    return ("statement", stack[index + 1])
                if k == ci.CursorKind.COMPOUND_STMT:
                    return ("statement", node)
                return None
        return None

    # ---- the walk ----
    def walk(self, node, stack, function):
        try:
            node.kind
        except ValueError:  # a cursor kind newer than the Python bindings: its children only
            for child in node.get_children():
                self.walk(child, stack, function)
            return
        if node.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
                         ci.CursorKind.FUNCTION_TEMPLATE, ci.CursorKind.LAMBDA_EXPR) \
                and node.spelling:
            function = node.spelling if node.kind != ci.CursorKind.LAMBDA_EXPR else function
        if not self.in_file(node) and node.kind != ci.CursorKind.TRANSLATION_UNIT:
            return
        if node.kind in (ci.CursorKind.TYPE_ALIAS_DECL, ci.CursorKind.TYPE_ALIAS_TEMPLATE_DECL,
                         ci.CursorKind.TYPEDEF_DECL, ci.CursorKind.STATIC_ASSERT,
                         ci.CursorKind.TEMPLATE_TYPE_PARAMETER,
                         ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER):
            return  # types and constant expressions: no run-time switch there
        if node.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD,
                         ci.CursorKind.FUNCTION_TEMPLATE, ci.CursorKind.VAR_DECL) \
                and "constexpr" in self.text[node.extent.start.offset:
                                             node.location.offset].decode().split():
            return
        if node.kind in (ci.CursorKind.IF_STMT, ci.CursorKind.CONDITIONAL_OPERATOR):
            children = list(node.get_children())
            if children and "DELTAPROOF_FAULT" in self.source(children[0]):
                # the fault's branch is off: only the clean branch is the kernel
                for child in children[2:3]:
                    self.walk(child, stack + [node], function)
                return
        if node.kind.is_expression() or node.kind.is_statement():
            if not self.from_macro(node):
                self.visit(node, stack, function)
        for child in node.get_children():
            self.walk(child, stack + [node], function)

    def visit(self, node, stack, function):
        k = node.kind
        parent = stack[-1] if stack else None
        before = len(self.sites)
        found = None  # a binary operator's token
        if k in (ci.CursorKind.BINARY_OPERATOR, ci.CursorKind.COMPOUND_ASSIGNMENT_OPERATOR):
            found = self.operator_token(node)
            if found:
                op, at = found
                holder = self.holder(node, stack)
                if op in ARITH_SWAP:
                    self.add("arith", at, len(op), ARITH_SWAP[op], node, holder)
                if op in RELATIONAL_SWAP:
                    self.add("relational", at, len(op), RELATIONAL_SWAP[op], node, holder)
                if op in ("<", "<=", ">", ">=", "!=") and parent is not None \
                        and parent.kind == ci.CursorKind.FOR_STMT:
                    right = list(node.get_children())[1]
                    a, b = self.span(right)
                    text = self.text[a:b].decode()
                    for delta in ("+ 1", "- 1"):
                        self.add("bound", a, b - a, f"({text}) {delta}", right,
                                 self.holder(right, stack + [node]))
        elif k == ci.CursorKind.CALL_EXPR:
            self.visit_call(node, stack)
        elif k == ci.CursorKind.ARRAY_SUBSCRIPT_EXPR:
            children = list(node.get_children())
            if len(children) == 2 and self.integral(children[1]):
                self.add_index(children[1], stack + [node])
        elif k in (ci.CursorKind.INTEGER_LITERAL, ci.CursorKind.FLOATING_LITERAL):
            if parent is not None and parent.kind in (ci.CursorKind.TEMPLATE_REF,):
                return
            text = self.source(node)
            holder = self.holder(node, stack)
            if k == ci.CursorKind.INTEGER_LITERAL:
                try:
                    n = int(text.rstrip("uUlL"), 0)
                except ValueError:
                    return
                for m in sorted({0, 1, n + 1, n - 1} - {n}):
                    self.add("constant", node.extent.start.offset, len(text), str(m), node, holder)
            else:
                suffix = "f" if text.endswith(("f", "F")) else ""
                for m in ("0.0", "1.0"):
                    if float(text.rstrip("fFlL")) != float(m):
                        self.add("constant", node.extent.start.offset, len(text), m + suffix,
                                 node, holder)
        if parent is not None and parent.kind == ci.CursorKind.FOR_STMT \
                and k in (ci.CursorKind.UNARY_OPERATOR, ci.CursorKind.COMPOUND_ASSIGNMENT_OPERATOR) \
                and self.builtin(node):
            # the step: the loop's ++/--/+= (a condition is no unary or compound assignment)
            tokens = [t.spelling for t in node.get_tokens()]
            steps = [t for t in tokens if t in ("++", "--", "+=", "-=")]
            variable = next((c for c in node.get_children()), None)
            if steps and variable is not None:
                a, b = self.span(node)
                # `i += 0`: an lvalue with a side effect, so the ternary draws no warning
                self.add("step", a, b - a, f"{self.source(variable)} += 0", node,
                         ("expression", node))
        if k == ci.CursorKind.UNARY_OPERATOR:
            tokens = list(node.get_tokens())
            if tokens and tokens[0].spelling in ("-", "!") \
                    and tokens[0].extent.start.offset == node.extent.start.offset:
                self.add("unary", node.extent.start.offset, 1, "", node, self.holder(node, stack))
        if parent is not None and parent.kind == ci.CursorKind.COMPOUND_STMT \
                and k in (ci.CursorKind.BINARY_OPERATOR, ci.CursorKind.COMPOUND_ASSIGNMENT_OPERATOR,
                          ci.CursorKind.CALL_EXPR, ci.CursorKind.UNARY_OPERATOR) \
                and (k != ci.CursorKind.BINARY_OPERATOR or (found or ("",))[0] == "="):
            a, b = self.span(node)
            end = self.text.find(b";", b)
            if end >= 0 and self.text[b:end].strip() == b"":
                self.add("delete", a, end + 1 - a, ";", node, ("statement", node))
        for s in self.sites[before:]:
            s.function = function

    def add_index(self, index, stack):
        a, b = self.span(index)
        text = self.text[a:b].decode()
        for delta in ("+ 1", "- 1"):
            self.add("index", a, b - a, f"({text}) {delta}", index, self.holder(index, stack))

    def visit_call(self, node, stack):
        name = node.spelling
        children = list(node.get_children())
        args = list(node.get_arguments())
        if name in ("operator+", "operator-", "operator*", "operator/") and len(children) >= 2:
            # an overloaded operator (Eigen's): the token between its operands
            # the callee (operator+) sits between the operands
            operands = [c for c in children if not c.spelling.startswith("operator")]
            found = self.token_between(node, operands[0], operands[-1], ARITH_SWAP) \
                if len(operands) >= 2 else None
            if found:
                op, at = found
                if op in ARITH_SWAP:
                    self.add("arith", at, len(op), ARITH_SWAP[op], node, self.holder(node, stack))
            return
        if name == "operator()" and len(args) == 3 and not self.integral(args[0]):
            args = args[1:]  # an overloaded call operator lists its object first
        if name == "operator()" and len(args) == 2 and all(self.integral(x) for x in args):
            for x in args:
                self.add_index(x, stack + [node])
            (a0, b0), (a1, b1) = self.span(args[0]), self.span(args[1])
            t0, t1 = self.text[a0:b0].decode(), self.text[a1:b1].decode()
            if t0 != t1:
                # one edit covering both indices
                self.add("swap", a0, b1 - a0, t1 + self.text[b0:a1].decode() + t0, node,
                         self.holder(node, stack))
        elif name in INDEX_CALLS and args and all(self.integral(x) for x in args):
            for x in args:
                self.add_index(x, stack + [node])
        elif name in EXP_SWAP:
            callee = children[0] if children else None
            if callee is not None and self.source(callee).split("::")[-1] in EXP_SWAP:
                a, b = self.span(callee)
                text = self.text[a:b].decode()
                self.add("unary", a, b - a, text[:len(text) - len(text.split("::")[-1])]
                         + EXP_SWAP[text.split("::")[-1]], node, self.holder(node, stack))
                if len(args) == 1:  # exp(x) -> (x)
                    self.add("unary", a, b - a, "", node, self.holder(node, stack))
        elif name == "exp" and not args:
            # Eigen's .exp(): drop it (x.array().exp() -> x.array())
            text = self.source(node)
            cut = text.encode().rfind(b".exp()")
            if cut >= 0:
                a = node.extent.start.offset + cut
                self.add("unary", a, len(".exp()"), "", node, self.holder(node, stack))

    def run(self):
        self.walk(self.tu.cursor, [], "")
        seen, out = set(), []
        for s in sorted(self.sites, key=lambda s: (s.start, s.operator, s.replacement)):
            key = (s.start, s.length, s.replacement)
            if key in seen:
                continue
            seen.add(key)
            out.append(s)
        return out


def line_column(text, offset):
    """1-based line and column (in characters) of a byte offset."""
    line = text.count(b"\n", 0, offset) + 1
    start = text.rfind(b"\n", 0, offset) + 1
    return line, len(text[start:offset].decode()) + 1


def list_mutants(paths, compile_commands, operators, first_id):
    mutants, next_id = [], first_id
    for path in paths:
        finder = Finder(path, compile_args(compile_commands, path), operators)
        for s in finder.run():
            line, column = line_column(finder.text, s.start)
            holder = None
            if s.holder is not None:
                kind, node = s.holder
                if kind == "initializer":
                    init = list(node.get_children())[-1]
                    a, b = finder.span(init)
                    holder = {"kind": kind, "offset": a, "length": b - a,
                              "type": node.type.get_canonical().spelling.replace("const ", "")}
                else:
                    a, b = finder.span(node)
                    if kind == "statement":  # the statement with its semicolon
                        end = finder.text.find(b";", b)
                        b = end + 1 if end >= 0 and finder.text[b:end].strip() == b"" else b
                    holder = {"kind": kind, "offset": a, "length": b - a}
            mutants.append({"id": next_id, "file": os.path.relpath(finder.path),
                            "operator": s.operator, "line": line, "column": column,
                            "offset": s.start, "length": s.length, "original": s.original,
                            "replacement": s.replacement, "function": s.function,
                            "schema": holder})
            next_id += 1
    return mutants


def schemata(text, mutants):
    """`text` (bytes) with every mutant that has a schema compiled in, and a
    map mutant id -> (first line, last line) of its own code there, so a
    compiler error names the mutant it is in. Holders nest (an expression
    inside a statement, a sum inside a product); each renders its children
    inside its original branch. Each mutant starts a line of its own."""
    held = [m for m in mutants if m["schema"] is not None]
    holders = {}
    for m in held:
        schema = m["schema"]
        key = (schema["offset"], schema["length"])
        if not (key[0] <= m["offset"] and m["offset"] + m["length"] <= key[0] + key[1]):
            continue  # a holder that does not contain its edit: leave the mutant out
        holders.setdefault(key, {"schema": schema, "mutants": []})["mutants"].append(m)
    order = sorted(holders, key=lambda k: (k[0], -k[1]))
    # a forest of holders by containment; a holder overlapping another without
    # nesting is left out (its mutants then have no schema)
    roots, stack = [], []
    children = {k: [] for k in order}
    kept = set()
    for k in order:
        while stack and not (k[0] + k[1] <= stack[-1][0] + stack[-1][1]):
            stack.pop()
        siblings = children[stack[-1]] if stack else roots
        if siblings and k[0] < siblings[-1][0] + siblings[-1][1]:
            continue
        siblings.append(k)
        kept.add(k)
        stack.append(k)

    pieces = []  # (text, mutant id or None)

    def emit(piece, mutant=None):
        pieces.append((piece, mutant))

    def emit_original(k):
        a, n = k
        at = a
        for c in children[k]:
            emit(text[at:c[0]].decode())
            render(c)
            at = c[0] + c[1]
        emit(text[at:a + n].decode())

    def mutated(k, m):
        a, n = k
        rel = m["offset"] - a
        original = text[a:a + n]
        return (original[:rel] + m["replacement"].encode() + original[rel + m["length"]:]).decode()

    def render(k):
        h = holders[k]
        kind = h["schema"]["kind"]
        if kind in ("expression", "initializer"):
            cast = h["schema"].get("type", "") if kind == "initializer" else ""
            for m in h["mutants"]:
                emit(f"\n(DELTAPROOF_MUTANT({m['id']}) ? {cast}({mutated(k, m)}) :", m["id"])
            emit(f"\n{cast}(")
            emit_original(k)
            emit(")" * (len(h["mutants"]) + 1))
        else:
            for m in h["mutants"]:
                emit(f"\nif (DELTAPROOF_MUTANT({m['id']})) {{ {mutated(k, m)} }} else", m["id"])
            emit("\n{ ")
            emit_original(k)
            emit(" }")

    at = 0
    for k in roots:
        emit(text[at:k[0]].decode())
        render(k)
        at = k[0] + k[1]
    emit(text[at:].decode())
    out, lines, line = [], {}, 1
    for piece, mutant in pieces:
        if mutant is not None:
            first = line + (1 if piece.startswith("\n") else 0)
            lines[mutant] = (first, line + piece.count("\n"))
        out.append(piece)
        line += piece.count("\n")
    held_ids = {m["id"] for k in kept for m in holders[k]["mutants"]}
    return "".join(out), lines, held_ids


def mutants_in_errors(compiler_output, schemata_path, lines):
    """The mutants a compiler's errors (and the notes that lead to them:
    "required from here") point into: each FILE:LINE: (g++) or FILE(LINE):
    (nvcc) naming the schemata file, mapped through `lines` (id -> [first, last])."""
    name = os.path.basename(schemata_path)
    hit = set()
    for match in re.finditer(r"([^\s:()\"']+)(?::(\d+):|\((\d+)\))", compiler_output):
        if os.path.basename(match.group(1)) != name:
            continue
        line = int(match.group(2) or match.group(3))
        for mutant, (first, last) in lines.items():
            if first <= line <= last:
                hit.add(int(mutant))
    return sorted(hit)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("files", nargs="+")
    ls.add_argument("--compile-commands", required=True)
    ls.add_argument("--operators", default=",".join(OPERATORS))
    ls.add_argument("--first-id", type=int, default=1)
    sc = sub.add_parser("schema")
    sc.add_argument("file")
    sc.add_argument("--mutants", required=True)
    sc.add_argument("--out", required=True)
    er = sub.add_parser("errors", help="the mutants a compiler's output (stdin) points into")
    er.add_argument("--lines", required=True, help="the schema's FILE.lines.json")
    er.add_argument("--log", help="the compiler's output (default: standard input)")
    args = parser.parse_args()
    if args.command == "errors":
        mapping = json.load(open(args.lines))
        log = open(args.log, errors="replace").read() if args.log else sys.stdin.read()
        print(json.dumps(mutants_in_errors(log, mapping["file"], mapping["lines"])))
        return
    if args.command == "list":
        _find_libclang()
        operators = args.operators.split(",")
        unknown = set(operators) - set(OPERATORS + OPT_IN)
        if unknown:
            raise SystemExit(f"unknown operators {sorted(unknown)}; known: "
                             f"{', '.join(OPERATORS + OPT_IN)}")
        json.dump(list_mutants(args.files, args.compile_commands, operators, args.first_id),
                  sys.stdout, indent=1)
        print()
    else:
        mutants = [m for m in json.load(open(args.mutants))
                   if os.path.realpath(m["file"]) == os.path.realpath(args.file)]
        text = open(args.file, "rb").read()
        source, lines, held = schemata(text, mutants)
        header = '#include "kernels/mutants.hpp"  // mutant schemata: falsify/mutants.py\n'
        open(args.out, "w").write(header + source)
        # the lines of each mutant's code in the written file (the header is line 1)
        json.dump({"file": args.out, "held": sorted(held),
                   "lines": {str(m): [a + 1, b + 1] for m, (a, b) in lines.items()}},
                  open(args.out + ".lines.json", "w"), indent=1)


if __name__ == "__main__":
    main()
