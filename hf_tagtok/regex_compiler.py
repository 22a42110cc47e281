"""Compile a `Split` regex (Oniguruma syntax, as stock tokenizers compiles it) for the engine's regex VM.

The pattern's character sets become a partition of all code points into classes (a 2-level lookup
table), each set a bitmap over class ids; the pattern becomes a backtracking program over those sets
that ext/engine/regex_vm.c runs with onig's leftmost-first priority. Every set comes from the probed
tables (tables/regex_sets.c, via the engine); nothing here knows Unicode.

Constructs outside the supported grammar raise UnsupportedRegex naming the construct and its offset,
so callers fall back to stock with a readable reason.
"""
import functools
import re
import struct

__all__ = ["UnsupportedRegex", "compile_pattern", "compile_alternatives", "compile_within_runs", "disjoint_class_runs",
           "CompiledRegex", "may_match_empty"]

MAX_CP = 0x10FFFF
MAX_INSTRUCTIONS = 50000
MAX_CLASSES = 0xFFFF

# Instruction opcodes (ext/engine/regex_vm.c: tt_rx_op).
OP_MATCH, OP_SET, OP_SPLIT, OP_JMP, OP_LOOK, OP_ASSERT, OP_RUN, OP_BACK, OP_SAVE, OP_REF, OP_ATOMIC = range(11)
# LOOK's flag (b) for a body run backward (ext/engine/regex_internal.h: RX_LOOK_BEHIND); bit 0 negates.
LOOK_BEHIND = 2
# Assertion kinds (tt_rx_assert).
A_LINE_BEGIN, A_LINE_END, A_TEXT_BEGIN, A_TEXT_END, A_TEXT_END_NL, A_WORD_B, A_NOT_WORD_B = range(7)


class UnsupportedRegex(ValueError):
    """The pattern uses a construct the compiler does not express (the message names it)."""


# ---------------------------------------------------------------- code point sets (sorted disjoint ranges)

def _norm(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges):
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return tuple(out)


def _intersect(a, b):
    return _complement(_norm(_complement(a) + _complement(b)))


@functools.lru_cache(maxsize=1)
def _tables():
    from . import _engine
    return _engine.regex_tables()


def _loose(name):
    return "".join(ch for ch in name.upper() if ch not in " -_")


def _property(name, where):
    tables = _tables()
    key = _loose(name)
    key = tables["aliases"].get(key, key)
    if key not in tables["sets"]:
        raise UnsupportedRegex(f"unknown property \\p{{{name}}} at offset {where}")
    return tables["sets"][key]


# ---------------------------------------------------------------- AST
# ("set", ranges) | ("cat", [nodes]) | ("alt", [nodes]) | ("rep", node, min, max|None, greedy)
# | ("run", ranges, min, max|None): a possessive repeat of one set (never gives chars back)
# | ("look", node, negate) | ("atomic", node): the first match of node, never given back | ("assert", kind)
# | ("reversed", node): a lookbehind's alternative of varying length, its concatenations reversed
# | ("empty",)
# | ("back", n): n chars back (fails when fewer precede), the start of a lookbehind's body
# | ("group", node, n): capture group n, kept only when a backreference reads it (else just its node)
# | ("ref", n, nullable, first chars): a backreference, the text group n last took
# | ("call", n): a call of group n not closed before it (may_match_empty's parse only)

class _Parser:
    def __init__(self, pattern, shape_only=False):
        self.p = pattern
        # may_match_empty's parse: a call of a group not closed yet is read as ("call", n) and `\X` as one char
        # (it takes one or more), for the tree's shape alone; a backreference is refused
        self.shape_only = shape_only
        self.i = 0
        self.groups = {}       # capture group number -> its node, once closed (onig numbers them by '(')
        self.in_looks = set()  # capture groups inside a lookaround
        self.in_atomics = set()  # capture groups inside an atomic group or under a possessive quantifier
        self.refs = set()      # group numbers backreferences read
        self.calls = []        # (group number, offset) of each subexpression call, which runs a copy of its body
        self.n_groups = 0      # capture groups opened so far
        self.look_depth = 0
        self.atomic_depth = 0
        self.names = {}        # group name -> the numbers of the groups of that name
        # onig: once a pattern names a group, only named groups capture, numbered in their order
        self.named = re.search(r"\(\?(<[^=!]|')", pattern) is not None

    def fail(self, what, at=None):
        raise UnsupportedRegex(f"{what} at offset {self.i if at is None else at}")

    def peek(self, k=0):
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def parse(self):
        node = self.alt(False)
        if self.i < len(self.p):
            self.fail(f"unbalanced {self.p[self.i]!r}")
        for number, start in self.calls:  # a call sets its group's captures, which a copy would not
            read = self.refs & ({number} | {n[2] for n in _nodes(self.groups[number]) if n[0] == "group"})
            if read:
                self.fail(f"subexpression call of a group a backreference reads (\\{min(read)})", start)
        return _captures_read(node, self.refs)

    def alt(self, ci):
        branches = [self.concat(ci)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.concat(ci))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def concat(self, ci):
        items = []
        ci_runs = []  # (start index in items) of case-insensitive literal runs, for multi-char folds
        while self.i < len(self.p) and self.peek() not in "|)":
            option = next((o for o in ("(?i)", "(?-i)") if self.p.startswith(o, self.i)), None)
            if option:  # onig: the rest of the enclosing group, its later alternatives too, under the option
                self.i += len(option)
                items.append(self.alt(option == "(?i)"))
                ci_runs.append(None)
                break
            start = self.i
            atom, literal = self.atom(ci)
            atom = self.quantifier(atom, start)
            items.append(atom)
            ci_runs.append(literal if (ci and literal is not None and atom[0] == "set") else None)
        self.check_multi_fold(ci_runs)
        if not items:
            return ("empty",)
        return items[0] if len(items) == 1 else ("cat", items)

    def check_multi_fold(self, letters):
        targets = _tables()["multi_folds"]
        run = ""
        for ch in letters + [None]:
            if ch is None:
                low = run.lower()
                for t in targets:
                    if t in low:
                        self.fail(f"case-insensitive {run!r} (onig matches {t!r} against one char)")
                run = ""
            else:
                run += ch

    def quantifier(self, atom, start):
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            got = self.interval()
            if got is None:
                return atom
            lo, hi = got
        else:
            return atom
        greedy = True
        if self.peek() == "?":
            self.i += 1
            greedy = False
        elif self.peek() == "+" and c != "{":  # onig: {n,m}+ is a greedy interval repeated
            self.i += 1
            self.no_stacked_quantifier()
            inner = list(_nodes(atom))
            self.in_atomics.update(n[2] for n in inner if n[0] == "group")
            if any(n[0] == "ref" for n in inner):
                self.fail("possessive quantifier over a backreference", start)
            return _atomic(self.repeat(atom, lo, hi, True, start))
        self.no_stacked_quantifier()
        return self.repeat(atom, lo, hi, greedy, start)

    def repeat(self, atom, lo, hi, greedy, start):
        if _peeled(atom)[0][0] in ("assert", "look", "empty"):
            self.fail("quantified assertion", start)
        if (hi is None or hi > 1) and _nullable(atom):
            self.fail("quantifier over an expression that can match empty", start)
        if hi is not None and hi < lo:
            self.fail("interval with max < min", start)
        return ("rep", atom, lo, hi, greedy)

    def no_stacked_quantifier(self):
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.interval(probe=True)):
            self.fail("stacked quantifier")

    def interval(self, probe=False):
        # onig: {n} {n,} {n,m} {,m}; anything else is a literal '{'
        j = self.i + 1
        k = j
        while k < len(self.p) and self.p[k].isdigit():
            k += 1
        a = self.p[j:k]
        if k < len(self.p) and self.p[k] == "}":
            if not a:
                return None
            if not probe:
                self.i = k + 1
            return int(a), int(a)
        if k >= len(self.p) or self.p[k] != ",":
            return None
        m = k + 1
        while m < len(self.p) and self.p[m].isdigit():
            m += 1
        b = self.p[k + 1:m]
        if m >= len(self.p) or self.p[m] != "}" or (not a and not b):
            return None
        if not probe:
            self.i = m + 1
        return (int(a) if a else 0), (int(b) if b else None)

    def atom(self, ci):
        """(node, literal char if the atom is one plain literal char else None)."""
        c = self.p[self.i]
        start = self.i
        if c == "(":
            return self.group(ci), None
        if c == "[":
            if not ci:
                return ("set", self.char_class()), None
            if self.peek(1) == "^":
                self.fail("case-insensitive negated character class")
            ranges = self.char_class()
            if ranges and ranges[-1][1] >= 0x80:
                self.fail("case-insensitive character class beyond ASCII", start)
            folds = _tables()["folds"]
            return ("set", _norm([*ranges, *((x, x) for lo, hi in ranges for c in range(lo, hi + 1)
                                             for x in folds.get(chr(c), ()))])), None
        if c == ".":
            self.i += 1
            return ("set", _property_escape(".")), None
        if c == "^":
            self.i += 1
            return ("assert", A_LINE_BEGIN), None
        if c == "$":
            self.i += 1
            return ("assert", A_LINE_END), None
        if c in "*+?":
            self.fail(f"target of repeat operator {c!r} is not specified")
        if c == "\\":
            node = self.escape(in_class=False)
            if node[0] == "char":
                return self.literal(node[1], ci, start)
            if node[0] == "set" and ci:
                self.fail("case-insensitive escape class", start)
            if node[0] == "ref":
                return self.backreference(node[1], ci, start), None
            if node[0] == "call":
                return self.call(node[1], start), None
            return node, None
        self.i += 1
        return self.literal(ord(c), ci, start)

    def backreference(self, n, ci, start):
        if self.shape_only:
            self.fail(f"backreference \\{n} in a shape-only parse", start)
        if ci:
            self.fail(f"case-insensitive backreference \\{n}", start)
        if self.look_depth:
            self.fail(f"backreference \\{n} inside a lookaround", start)
        if self.atomic_depth:
            self.fail(f"backreference \\{n} inside an atomic group", start)
        if n not in self.groups:
            self.fail(f"backreference \\{n} to a group not closed before it", start)
        if n in self.in_looks:
            self.fail(f"backreference \\{n} to a group inside a lookaround", start)
        if n in self.in_atomics:
            self.fail(f"backreference \\{n} to a group inside an atomic group or possessive quantifier", start)
        self.refs.add(n)
        body = self.groups[n]
        return ("ref", n, _nullable(body), _first_chars(body))

    def call(self, n, start):
        """A subexpression call of group n closed before it: a copy of the group's body, which onig backtracks
        into as into the group itself, with the options in force where the group stands. A call of a group
        not closed yet (a forward or recursive call) is refused."""
        if self.look_depth:
            self.fail(f"subexpression call \\g<{n}> inside a lookaround", start)
        if n not in self.groups:
            if self.shape_only:
                return ("call", n)
            self.fail(f"subexpression call \\g<{n}> of a group not closed before it", start)
        if n in self.in_looks:
            self.fail(f"subexpression call \\g<{n}> of a group inside a lookaround", start)
        self.calls.append((n, start))
        return self.groups[n]

    def literal(self, cp, ci, start):
        if not ci:
            return ("set", ((cp, cp),)), None
        ch = chr(cp)
        if cp >= 0x80:
            self.fail("case-insensitive non-ASCII literal", start)
        folds = _tables()["folds"]
        members = folds.get(ch)
        return ("set", _norm((x, x) for x in members) if members else ((cp, cp),)), ch

    def capture(self, ci, name=None):
        self.n_groups += 1
        number = self.n_groups
        if self.look_depth:
            self.in_looks.add(number)
        if self.atomic_depth:
            self.in_atomics.add(number)
        if name is not None:
            self.names.setdefault(name, []).append(number)
        node = ("group", self.alt(ci), number)
        self.groups[number] = node[1]
        return node

    def group(self, ci):
        start = self.i
        self.i += 1
        if self.peek() != "?":
            node = self.alt(ci) if self.named else self.capture(ci)
        else:
            self.i += 1
            c = self.peek()
            if c == ":":
                self.i += 1
                node = self.alt(ci)
            elif c in ("=", "!"):
                self.i += 1
                node = ("look", self.looked_at(ci), c == "!")
            elif self.p.startswith("i:", self.i):
                self.i += 2
                node = self.alt(True)
            elif self.p.startswith("-i:", self.i):
                self.i += 3
                node = self.alt(False)
            elif c == "<" and self.peek(1) in ("=", "!"):
                negate = self.peek(1) == "!"
                self.i += 2
                node = self.lookbehind(self.looked_at(ci), negate, start)
            elif c == ">":
                self.i += 1
                self.atomic_depth += 1
                node = _atomic(self.alt(ci))
                self.atomic_depth -= 1
            elif c == "<" or c == "'":
                node = self.capture(ci, self.group_name(">" if c == "<" else "'", start))
            elif c == "P":
                self.fail("named group", start)
            elif c == "#":
                self.fail("comment group", start)
            else:
                self.fail(f"group option (?{c}", start)
        if self.peek() != ")":
            self.fail("missing ')'", start)
        self.i += 1
        return node

    def group_name(self, close, start):
        """The name between the delimiter at the offset and `close` (a group's or a `\\k`'s), consumed."""
        end = self.p.find(close, self.i + 1)
        name = self.p[self.i + 1:end] if end > 0 else ""
        if not name or not re.fullmatch(r"[^\W\d]\w*", name):
            self.fail("malformed group name", start)
        self.i = end + 1
        return name

    def looked_at(self, ci):
        self.look_depth += 1
        node = self.alt(ci)
        self.look_depth -= 1
        return node

    def lookbehind(self, body, negate, start):
        """Each top-level alternative is looked for ending here: one of a fixed number of chars starting that
        many chars back, one of varying length reversed, from here backward (any start will do); as in onig,
        `(?<=a|bc)` is `(?:(?<=a)|(?<=bc))` and `(?<!a|bc)` is `(?<!a)(?<!bc)`."""
        looks = []
        for branch in (body[1] if body[0] == "alt" else [body]):
            length = _fixed_length(branch)
            if length is not None:
                looks.append(("look", ("cat", [("back", length), branch]), negate))
            elif any(n == ("assert", A_WORD_B) or n == ("assert", A_NOT_WORD_B) for n in _nodes(branch)):
                # onig's answer differs at the text's start: `(?<=\bx?)a` finds no match in "ab"
                self.fail("word boundary in a lookbehind alternative of varying length", start)
            elif _reversible(branch):
                looks.append(("look", ("reversed", _reversed(branch)), negate))
            else:
                self.fail("lookbehind whose alternative holds a lookaround, an atomic group, a possessive repeat, "
                          "\\z or \\Z", start)
        if len(looks) == 1:
            return looks[0]
        return ("cat", looks) if negate else ("alt", looks)

    def escape(self, in_class):
        start = self.i
        self.i += 1
        c = self.peek()
        if not c:
            self.fail("trailing backslash", start)
        self.i += 1
        simple = {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11, "a": 7, "e": 27}
        if c in simple:
            return ("char", simple[c])
        if c in "sdwh":
            return ("set", _property_escape("\\" + c))
        if c in "SDWH":
            return ("set", _complement(_property_escape("\\" + c.lower())))
        if c in "pP":
            if self.peek() != "{":
                self.fail(f"\\{c} without {{name}}", start)
            end = self.p.find("}", self.i)
            if end < 0:
                self.fail(f"unterminated \\{c}{{", start)
            name = self.p[self.i + 1:end]
            self.i = end + 1
            negate = c == "P"
            if name.startswith("^"):
                negate, name = not negate, name[1:]
            ranges = _property(name, start)
            return ("set", _complement(ranges) if negate else ranges)
        if c == "x":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1:end] if end > 0 else ""
                if not digits or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    self.fail("malformed \\x{...}", start)
                self.i = end + 1
            else:
                j = self.i
                while j < len(self.p) and j < self.i + 2 and self.p[j] in "0123456789abcdefABCDEF":
                    j += 1
                digits = self.p[self.i:j]
                if not digits:
                    self.fail("malformed \\x", start)
                self.i = j
                if int(digits, 16) >= 0x80:
                    self.fail("\\x byte escape above 0x7F (a raw byte in onig)", start)
            cp = int(digits, 16)
            if cp > MAX_CP or 0xD800 <= cp < 0xE000:
                self.fail("\\x{...} outside the Unicode scalar values", start)
            return ("char", cp)
        if c == "u":
            digits = self.p[self.i:self.i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.fail("malformed \\u", start)
            self.i += 4
            cp = int(digits, 16)
            if 0xD800 <= cp < 0xE000:
                self.fail("\\u surrogate", start)
            return ("char", cp)
        if not in_class:
            if c == "A":
                return ("assert", A_TEXT_BEGIN)
            if c == "z":
                return ("assert", A_TEXT_END)
            if c == "Z":
                return ("assert", A_TEXT_END_NL)
            if c == "b":
                return ("assert", A_WORD_B)
            if c == "B":
                return ("assert", A_NOT_WORD_B)
        if c in "123456789" and not in_class and not self.peek().isdigit():
            return ("ref", int(c))
        if c == "k" and not in_class and self.peek() in ("<", "'"):  # \k<name>: the named group's text
            if re.match(r"[<']-?\d", self.p[self.i:]):
                self.fail("numbered backreference \\k<n>", start)
            numbers = self.names.get(self.group_name(">" if self.peek() == "<" else "'", start), ())
            if len(numbers) != 1:
                self.fail("backreference \\k<..> to a name no group or several groups have before it", start)
            return ("ref", numbers[0])
        if c == "g" and not in_class and self.peek() in ("<", "'"):  # \g<name>: a call of a group's pattern
            target = re.match(r"<([-+]?\d+)>|'([-+]?\d+)'", self.p[self.i:])
            if target is None:
                numbers = self.names.get(self.group_name(">" if self.peek() == "<" else "'", start), ())
                if len(numbers) != 1:
                    self.fail("subexpression call \\g<..> of a name no group or several groups have before it",
                              start)
                return ("call", numbers[0])
            self.i += target.end()
            number = target.group(1) or target.group(2)
            if not number.isdigit():
                self.fail("relative subexpression call", start)
            if self.named:
                self.fail("numbered subexpression call in a pattern of named groups", start)
            if int(number) == 0:
                self.fail("subexpression call of the whole pattern", start)
            return ("call", int(number))
        if c == "g" and not in_class:
            self.fail("subexpression call", start)
        if c == "X" and not in_class and self.shape_only:
            return ("set", ((0, MAX_CP),))
        if c.isdigit():
            self.fail(f"{'octal escape' if in_class else 'backreference or octal escape'} \\{c}", start)
        if c.isalnum() or ord(c) >= 0x80:
            self.fail(f"escape \\{c}", start)
        return ("char", ord(c))

    def char_class(self):
        start = self.i
        self.i += 1
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        if self.peek() == "]":
            self.fail("']' first in a character class", self.i)
        groups, pending = [], []  # onig: '&&' intersects the unions on either side (lowest precedence)
        while True:
            c = self.peek()
            if not c:
                self.fail("premature end of char-class", start)
            if c == "]":
                self.i += 1
                break
            if self.p.startswith("&&", self.i):
                self.i += 2
                groups.append(_norm(pending))
                pending = []
                continue
            if c == "[":
                if self.peek(1) == ":":
                    self.fail("POSIX bracket", self.i)
                pending.extend(self.char_class())
                continue
            item_start = self.i
            lo = self.class_atom()
            if lo[0] == "set":
                if self.peek() == "-" and self.peek(1) not in ("]", ""):
                    self.fail("range from a class escape", item_start)
                pending.extend(lo[1])
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                if self.peek() == "[" or self.p.startswith("&&", self.i):
                    self.fail("range to a nested class", self.i)
                hi = self.class_atom()
                if hi[0] == "set":
                    self.fail("range to a class escape", item_start)
                if hi[1] < lo[1]:
                    self.fail("empty range in char class", item_start)
                pending.append((lo[1], hi[1]))
            else:
                pending.append((lo[1], lo[1]))
        ranges = _norm(pending)
        if groups:
            if not pending:
                self.fail("empty operand of '&&'", start)
            for g in groups:
                if not g:
                    self.fail("empty operand of '&&'", start)
                ranges = _intersect(ranges, g)
        return _complement(ranges) if negate else ranges

    def class_atom(self):
        c = self.p[self.i]
        if c == "\\":
            node = self.escape(in_class=True)
            if node[0] == "assert":
                self.fail("assertion in a character class", self.i)
            return node
        self.i += 1
        return ("char", ord(c))


def _property_escape(name):
    return _tables()["sets"][name]


def _peeled(node):
    """(`node` without the capture groups wrapped around it, their numbers)."""
    numbers = []
    while node[0] == "group":
        numbers.append(node[2])
        node = node[1]
    return node, numbers


def _nodes(node):
    """`node` and every node inside it."""
    yield node
    if node[0] in ("cat", "alt"):
        for inner in node[1]:
            yield from _nodes(inner)
    elif node[0] in ("group", "rep", "look", "atomic", "reversed"):
        yield from _nodes(node[1])


def _atomic(node):
    """`(?>node)`, as plain a node as keeps its meaning: a node that matches one way at most needs no atomic
    group (the DFA can run it), and a greedy repeat of one set is a run (captures inside an atomic group are
    never read)."""
    if _one_way(node):
        return node
    body = _peeled(node)[0]
    repeated = _peeled(body[1])[0] if body[0] == "rep" else None
    if repeated is not None and repeated[0] == "set" and body[4]:
        return ("run", repeated[1], body[2], body[3])
    return ("atomic", node)


def _one_way(node):
    """Whether `node` can match at most one way from a position (no alternative, no repeat of varying count)."""
    kind = node[0]
    if kind == "cat":
        return all(map(_one_way, node[1]))
    if kind == "group":
        return _one_way(node[1])
    if kind == "rep":
        return node[2] == node[3] and _one_way(node[1])
    return kind in ("set", "run", "empty", "assert", "look", "ref", "atomic")  # an atomic group keeps one match


def _captures_read(node, refs):
    """`node` with every capture group no backreference reads replaced by its own node."""
    kind = node[0]
    if kind == "group":
        inner = _captures_read(node[1], refs)
        return ("group", inner, node[2]) if node[2] in refs else inner
    if kind in ("cat", "alt"):
        return (kind, [_captures_read(n, refs) for n in node[1]])
    if kind == "rep":
        return ("rep", _captures_read(node[1], refs), *node[2:])
    if kind in ("look", "atomic"):
        return (kind, _captures_read(node[1], refs), *node[2:])
    return node


def _nullable(node, groups=None, calling=frozenset()):
    """Whether `node` can match empty. A call of a group not closed before it (a shape-only parse, `groups` its
    groups' nodes) can when the group can without calling itself again: the least fixpoint, as a derivation of
    the empty match that calls a group inside itself has a shorter one that does not. Without `groups`: can."""
    kind = node[0]
    if kind == "set":
        return False
    if kind == "call":
        n = node[1]
        return groups is None or n not in groups or (n not in calling and _nullable(groups[n], groups, calling | {n}))
    if kind in ("group", "atomic"):
        return _nullable(node[1], groups, calling)
    if kind == "ref":
        return node[2]
    if kind == "run":
        return node[2] == 0
    if kind in ("empty", "assert", "look"):
        return True
    if kind == "cat":
        return all(_nullable(n, groups, calling) for n in node[1])
    if kind == "alt":
        return any(_nullable(n, groups, calling) for n in node[1])
    if kind == "rep":
        return node[2] == 0 or _nullable(node[1], groups, calling)
    raise AssertionError(kind)


def _fixed_length(node):
    """The chars every match of `node` takes, or None when that varies or `node` looks around or ends the text
    (onig refuses both inside a lookbehind); an anchor takes none (checked where the body stands)."""
    kind = node[0]
    if kind == "set":
        return 1
    if kind == "empty" or (kind == "assert" and node[1] not in (A_TEXT_END, A_TEXT_END_NL)):
        return 0
    if kind in ("group", "atomic"):
        return _fixed_length(node[1])
    if kind == "run":
        return node[2] if node[2] == node[3] else None
    if kind == "rep":
        body = _fixed_length(node[1])
        return None if body is None or node[2] != node[3] else body * node[2]
    if kind in ("cat", "alt"):
        lengths = [_fixed_length(n) for n in node[1]]
        if None in lengths or (kind == "alt" and len(set(lengths)) > 1):
            return None
        return sum(lengths) if kind == "cat" else lengths[0]
    return None


def _reversible(node):
    """Whether `node` may run reversed in a lookbehind: what it matches does not depend on the direction (no
    lookaround, atomic group, possessive repeat, backreference; no `\\z` or `\\Z`, which onig refuses there)."""
    return all(n[0] in ("set", "empty", "group", "rep", "cat", "alt")
               or (n[0] == "assert" and n[1] not in (A_TEXT_END, A_TEXT_END_NL)) for n in _nodes(node))


def _reversed(node):
    """`node` with every concatenation in reverse order: run backward, it takes its chars last to first (its
    capture groups dropped: no backreference reads a group inside a lookaround)."""
    kind = node[0]
    if kind == "cat":
        return ("cat", [_reversed(n) for n in reversed(node[1])])
    if kind == "alt":
        return ("alt", [_reversed(n) for n in node[1]])
    if kind == "group":
        return _reversed(node[1])
    if kind == "rep":
        return ("rep", _reversed(node[1]), *node[2:])
    return node


def _first_chars(node):
    """Code points the first char a match of `node` takes can be (a lookaround or anchor takes none; an
    empty match, none)."""
    kind = node[0]
    if kind in ("set", "run"):
        return node[1]
    if kind in ("group", "atomic"):
        return _first_chars(node[1])
    if kind == "ref":
        return node[3]
    if kind in ("assert", "look", "empty"):
        return ()
    if kind == "rep":
        return _first_chars(node[1])
    if kind == "alt":
        return _norm([r for n in node[1] for r in _first_chars(n)])
    if kind == "cat":
        acc = []
        for n in node[1]:
            acc.extend(_first_chars(n))
            if not _nullable(n):
                break
        return _norm(acc)
    raise AssertionError(kind)


# ---------------------------------------------------------------- code generation

class _Emitter:
    def __init__(self):
        self.code = []      # [op, a, b, c]
        self.sets = {}      # ranges -> set index
        self.n_splits = 0
        self.n_subs = 0
        self.pending_subs = []

    def emit(self, op, a=0, b=0, c=0):
        self.code.append([op, a, b, c])
        if len(self.code) > MAX_INSTRUCTIONS:
            raise UnsupportedRegex(f"pattern expands to more than {MAX_INSTRUCTIONS} instructions")
        return len(self.code) - 1

    def split(self, first, second):
        pc = self.emit(OP_SPLIT, first, second, self.n_splits)
        self.n_splits += 1
        return pc

    def gen(self, node):
        kind = node[0]
        if kind == "set":
            self.emit(OP_SET, self.sets.setdefault(node[1], len(self.sets)))
        elif kind == "empty":
            pass
        elif kind == "run":
            _, ranges, lo, hi = node
            self.emit(OP_RUN, self.sets.setdefault(ranges, len(self.sets)), lo, -1 if hi is None else hi)
        elif kind == "cat":
            for n in node[1]:
                self.gen(n)
        elif kind == "alt":
            jumps = []
            branches = node[1]
            for k, branch in enumerate(branches):
                if k + 1 < len(branches):
                    sp = self.split(len(self.code) + 1, 0)
                    self.gen(branch)
                    jumps.append(self.emit(OP_JMP))
                    self.code[sp][2] = len(self.code)
                else:
                    self.gen(branch)
            for j in jumps:
                self.code[j][1] = len(self.code)
        elif kind == "rep":
            _, body, lo, hi, greedy = node
            for _ in range(lo):
                self.gen(body)
            if hi is None:
                top = self.split(0, 0)
                self.gen(body)
                self.emit(OP_JMP, top)
                self._order(top, top + 1, len(self.code), greedy)
            else:
                exits = []
                for _ in range(hi - lo):
                    sp = self.split(0, 0)
                    exits.append(sp)
                    self.gen(body)
                for sp in exits:
                    self._order(sp, sp + 1, len(self.code), greedy)
        elif kind == "assert":
            if node[1] in (A_WORD_B, A_NOT_WORD_B):
                word = self.sets.setdefault(_property_escape("\\w"), len(self.sets))
                self.emit(OP_ASSERT, node[1], word)
            elif node[1] == A_LINE_END:  # the newline set lets the DFA decide `$` from the next char's class
                self.emit(OP_ASSERT, node[1], self.sets.setdefault(((10, 10),), len(self.sets)))
            else:
                self.emit(OP_ASSERT, node[1])
        elif kind == "back":
            self.emit(OP_BACK, node[1])
        elif kind == "group":
            self.emit(OP_SAVE, 2 * node[2])
            self.gen(node[1])
            self.emit(OP_SAVE, 2 * node[2] + 1)
        elif kind == "ref":
            self.emit(OP_REF, node[1])
        elif kind == "look":
            backward = node[1][0] == "reversed"
            self.sub_program(OP_LOOK, node[1][1] if backward else node[1], int(node[2]) | LOOK_BEHIND * backward)
        elif kind == "atomic":
            self.sub_program(OP_ATOMIC, node[1])
        else:
            raise AssertionError(kind)

    def sub_program(self, op, body, flags=0):
        """A lookaround (`flags`: negated, LOOK_BEHIND) or atomic group: its body is a sub-program after the main
        one, run to its first match (its own SPLITs numbered after the main program's, by finish)."""
        pc = self.emit(op, 0, flags, self.n_subs)
        self.n_subs += 1
        self.pending_subs.append((pc, body))

    def _order(self, pc, body, out, greedy):
        self.code[pc][1], self.code[pc][2] = (body, out) if greedy else (out, body)

    def finish(self):
        self.emit(OP_MATCH)
        while self.pending_subs:
            pc, body = self.pending_subs.pop(0)
            self.code[pc][1] = len(self.code)
            self.gen(body)
            self.emit(OP_MATCH)


def _partition(sets):
    """Class ids: code points with the same membership in every set share a class.

    Returns (per-interval class ids, interval bounds, membership matrix classes x sets)."""
    import numpy as np
    bounds = np.unique(np.array([0, MAX_CP + 1] + [v for ranges in sets for lo, hi in ranges for v in (lo, hi + 1)],
                                dtype=np.int64))
    starts = bounds[:-1]
    member = np.zeros((len(starts), len(sets)), dtype=bool)
    for k, ranges in enumerate(sets):
        if ranges:
            los = np.array([lo for lo, _ in ranges], dtype=np.int64)
            his = np.array([hi for _, hi in ranges], dtype=np.int64)
            at = np.searchsorted(los, starts, side="right") - 1
            member[:, k] = (at >= 0) & (starts <= his[np.maximum(at, 0)])
    # rows as packed bytes: their byte order is the rows' order, and a 1-D unique is far cheaper than axis=0
    packed = np.ascontiguousarray(np.packbits(member, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel() if packed.shape[1] else np.zeros(len(member), np.uint8)
    _, first, interval_class = np.unique(keys, return_index=True, return_inverse=True)
    signatures = member[first]
    if len(signatures) > MAX_CLASSES:
        raise UnsupportedRegex(f"pattern's sets split code points into more than {MAX_CLASSES} classes")
    return bounds, interval_class.ravel(), signatures


def _two_level(bounds, interval_class):
    """stage1[cp >> 8] -> block, stage2[block*256 + (cp & 255)] -> class id, blocks deduplicated."""
    import numpy as np
    per_cp = np.repeat(interval_class.astype(np.uint16), np.diff(bounds))
    blocks, stage1 = {}, []
    for row in per_cp.reshape(-1, 256):
        stage1.append(blocks.setdefault(row.tobytes(), len(blocks)))
    return np.array(stage1, dtype=np.uint16), b"".join(blocks)


def _class_run(node):
    """(ranges, chunk) of a pattern whose matches are runs of one set of code points (at least one char), each
    decided by the chars from its start on within the run: the set's ranges, and the chars of each match it
    cuts a run into from the run's start (0: the whole run) when every char of a run falls in some match (else
    None); (None, None) for any other pattern."""
    kind = node[0]
    if kind == "set":
        return node[1], 1
    if kind == "run" and node[2] >= 1:
        return node[1], (node[3] or 0) if node[2] == 1 else None
    if kind == "rep" and node[2] >= 1 and node[1][0] == "set":
        greedy = node[4]
        return node[1][1], ((node[3] or 0) if greedy else 1) if node[2] == 1 else None
    return None, None


class CompiledRegex:
    """A compiled pattern: program words, class map and set bitmaps, as bytes for the engine step.

    With `runs` ((code point ranges, chars per chunk) pairs, pairwise disjoint sets), the step runs the
    pattern on each segment of the text: a chunk of a run of one of those sets, or a stretch of none of
    them. That is what Isolated splits by class-run patterns (_class_run) followed by this pattern give."""

    def __init__(self, pattern, tree=None, runs=()):
        self.pattern = pattern
        if tree is None:
            tree = _Parser(pattern).parse()
        self.class_run, self.run_chunk = _class_run(tree)
        em = _Emitter()
        em.gen(tree)
        n_main_splits = em.n_splits
        em.finish()
        # a prefilter: search starts whose char cannot begin a match are skipped without running the program;
        # none (-1) only when a match can be empty or any char can begin one (the DFA's cut loop relies on it)
        first = None if _nullable(tree) else _first_chars(tree)
        if first == ((0, MAX_CP),):  # every char can start a match: nothing to skip
            first = None
        first_set = -1 if first is None else em.sets.setdefault(first, len(em.sets))
        segments = [v for ranges, chunk in runs for v in (em.sets.setdefault(ranges, len(em.sets)), chunk)]
        sets = [None] * len(em.sets)
        for ranges, idx in em.sets.items():
            sets[idx] = ranges
        bounds, interval_class, signatures = _partition(sets)
        stage1, stage2 = _two_level(bounds, interval_class)
        n_classes = len(signatures)
        words = (n_classes + 63) // 64
        bitmaps = [0] * (len(sets) * words)
        for cls, set_index in zip(*signatures.nonzero()):
            bitmaps[set_index * words + cls // 64] |= 1 << int(cls % 64)
        self.n_instructions = len(em.code)
        self.n_sets = len(sets)
        self.n_classes = n_classes
        self.step_fields = {
            "code": struct.pack(f"<{4 * len(em.code)}i", *[v for inst in em.code for v in inst]),
            "stage1": stage1.tobytes(),
            "stage2": stage2,
            "sets": struct.pack(f"<{len(bitmaps)}Q", *bitmaps),
            "n_classes": n_classes,
            "n_main_splits": n_main_splits,
            "n_splits": em.n_splits,
            "n_subs": em.n_subs,
            "first_set": first_set,
        }
        if segments:
            self.step_fields["segments"] = struct.pack(f"<{len(segments)}I", *segments)


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern):
    """CompiledRegex for `pattern`, or UnsupportedRegex naming what the compiler cannot express."""
    return CompiledRegex(pattern)


@functools.lru_cache(maxsize=256)
def compile_alternatives(patterns):
    """One CompiledRegex trying `patterns` (a tuple) in order at each position, as their `|` would, each
    parsed on its own (so a flag such as `(?i)` stays inside its pattern)."""
    tree = ("alt", [_Parser(pattern).parse() for pattern in patterns])
    return CompiledRegex("|".join(f"(?:{pattern})" for pattern in patterns), tree)


@functools.lru_cache(maxsize=256)
def compile_within_runs(pattern, runs):
    """CompiledRegex for `pattern` run within the segments of `runs` (a tuple of CompiledRegex class-run
    patterns with a run_chunk, whose sets disjoint_class_runs holds pairwise disjoint): one step for their
    Isolated splits followed by this pattern's."""
    return CompiledRegex(pattern, runs=tuple((run.class_run, run.run_chunk) for run in runs))


def disjoint_class_runs(compiled):
    """Whether every CompiledRegex only matches runs of its own char set and no two sets share a code point.

    Then no match of one pattern can touch a char another pattern matches, and each match depends only on
    its run: splitting by each pattern in turn (Isolated) cuts where splitting once by their alternation does."""
    runs = [regex.class_run for regex in compiled]
    if any(ranges is None for ranges in runs):
        return False
    edges = sorted(r for ranges in runs for r in ranges)
    return all(prev[1] < cur[0] for prev, cur in zip(edges, edges[1:]))


def may_match_empty(pattern):
    """Whether some match of `pattern` (one onig accepts) can be empty, in any text: False only when no way
    through it takes no char. Forward and recursive subexpression calls and `\\X`, which the compiler refuses,
    are read for their shape; a pattern whose shape cannot be read may."""
    parser = _Parser(pattern, shape_only=True)
    try:
        tree = parser.parse()
    except UnsupportedRegex:
        return True
    return _nullable(tree, parser.groups)


# Escapes whose match depends on text outside it (anchors, word and grapheme boundaries, \K) or commits to
# its first way through (\X, \R): such a pattern can match a stretch alone where it does not in the text.
_CONTEXT_ESCAPES = set("bBAzZGyYXRK")
# Escapes followed by a bracketed argument (\p{L}, \x{41}, \k<name>, \g<1>).
_BRACKETED_ESCAPES = set("pPxokgu")
_CLOSING = {"{": "}", "<": ">", "'": "'"}


def looks_at_no_context(pattern):
    """Whether every match of `pattern` depends only on the chars it spans, and backtracks freely: no anchor,
    boundary, lookaround, atomic group, possessive repeat, absent or conditional group, nor an option beyond
    i and m. Then, wherever no match in a text crosses the end of a stretch, the stretch alone has the same
    matches. A lexical scan of a pattern onig accepts: conservative, it may refuse a pattern that qualifies."""
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            escaped = pattern[i + 1:i + 2]
            if depth == 0 and escaped in _CONTEXT_ESCAPES:
                return False
            i += 2
            if escaped in _BRACKETED_ESCAPES and pattern[i:i + 1] in _CLOSING:
                close = pattern.find(_CLOSING[pattern[i]], i + 1)
                if close < 0:
                    return False
                i = close + 1
            continue
        if c == "[":
            if pattern.startswith("]", i + 1 + (pattern[i + 1:i + 2] == "^")):
                return False  # a leading ']' reads differently across syntaxes
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        elif depth == 0:
            if c in "^$" or (c in "*+?}" and pattern[i + 1:i + 2] == "+"):
                return False
            if c == "(" and pattern[i + 1:i + 2] == "?" and not _plain_group(pattern, i + 2):
                return False
            if c == "(" and pattern[i + 1:i + 2] == "?":
                i += 2  # the group's '?' is no quantifier
                continue
        i += 1
    return True


def _plain_group(pattern, at):
    """Whether the group whose '(?' ends before `at` is a named or non-capturing group, or sets options i and m."""
    if pattern[at:at + 1] == "<" and pattern[at + 1:at + 2] not in ("=", "!"):
        return True
    if pattern[at:at + 1] == "'":
        return True
    options = re.match(r"[im-]*[:)]", pattern[at:])
    return options is not None
