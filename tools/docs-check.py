#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Parse reStructuredText files with docutils; fail on any warning or error.

Usage: docs-check.py [--text FILE]... FILE.rst...

docutils alone knows neither Sphinx's toctree directive nor its :doc: role,
which Documentation/ uses.  Both get a small stand-in here that checks its
targets exist, so a broken cross-reference is a finding too, as is a page
that no toctree lists (index.rst is the root of its directory).

The code the pages quote must name what exists.  In the literal text of
each page (inline literals and literal blocks), and in each --text file
(the plain-text README):

* every ``make <target>`` names a target of the top Makefile, except a
  make run in another tree (``make -C``) and the kernel tree's own
  targets in KBUILD_TARGETS; in a --text file only its quoted and
  indented text counts, where the commands are, not its prose;
* every path whose first component is a top-level entry of this repository
  (as git lists them: ``ndk/cq.c``, ``tools/vm/lib.sh``) exists; in a
  --text file anywhere in it.  A path
  inside a longer one (``/sys/kernel/debug/ndk/``, ``<tree>/tools/...``,
  ``<ndk/ndk.h>``) is not this repository's, nor is DKMS's ``ndk/0.1.0``;
  a path git ignores is a build output, and a placeholder
  (``tests/<stem>_test.c``) or a wildcard must match a file.

The pages describe ndk as it is, each figure in one place.  Over every
file given, --text files included:

* history stays in Documentation/ndk/changes.rst: anywhere else a commit
  hash (7 to 40 hex digits with a digit and a letter among them), a
  date (YYYY-MM or YYYY-MM-DD) or an issue number ("issue 33", "#33")
  is a finding;
* a --text file (README) states no measured figure: no number with a
  unit of time, size or percentage, no ratio of three decimals, no
  "N passed" count; it names the page that holds the figure instead;
* each kind of figure in FIGURES has one owning page; the same kind
  stated on any other page but changes.rst is a finding (that page
  links to the owner instead), and performance.rst's "Bounds" table
  must give every bound tests/bench/report.py enforces, as report.py
  has it;
* every term of TERMS that a file uses must have an entry (a term of
  the definition list) in Documentation/ndk/glossary.rst.
"""

import glob
import io
import os
import re
import subprocess
import sys

from docutils import nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles

# Documents some toctree lists, as paths without the .rst suffix.
listed = set()


def resolve(source, target):
    """Path, without suffix, of document target named from file source."""
    return os.path.normpath(os.path.join(os.path.dirname(source), target))


def exists(doc):
    return os.path.isfile(doc + '.rst')


def split_title(text):
    """Split Sphinx's "title <target>" form; a bare target has no title."""
    m = re.fullmatch(r'(.+?)\s*<(.+)>', text, re.DOTALL)
    return (m.group(1), m.group(2)) if m else (None, text)


class TocTree(Directive):
    has_content = True
    # Sphinx's options that do not change how entries are read.
    option_spec = {
        'maxdepth': directives.nonnegative_int,
        'caption': directives.unchanged_required,
        'name': directives.unchanged,
        'hidden': directives.flag,
        'numbered': directives.flag,
        'titlesonly': directives.flag,
    }

    def run(self):
        source = self.state.document['source']
        msgs = []
        for entry in self.content:
            if not entry.strip():
                continue
            doc = resolve(source, split_title(entry.strip())[1])
            if exists(doc):
                listed.add(doc)
            else:
                msgs.append(self.reporter.warning(
                    'toctree lists a missing document: %s' % entry.strip(),
                    line=self.lineno))
        return msgs


def doc_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    title, target = split_title(utils.unescape(text))
    if not exists(resolve(inliner.document['source'], target)):
        msg = inliner.reporter.warning('unknown document: %s' % target,
                                       line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.inline(rawtext, title or target)], []


def check(path):
    """Parse one file; return its warnings and errors as text."""
    stream = io.StringIO()
    with open(path, encoding='utf-8') as f:
        publish_doctree(f.read(), source_path=path, settings_overrides={
            'report_level': 2,      # warnings and worse
            'halt_level': 5,        # never stop early: report them all
            'warning_stream': stream,
        })
    return stream.getvalue()


# Targets of the kernel's own Makefile that the pages name while they
# describe how a test kernel is configured and built.
KBUILD_TARGETS = {'tinyconfig', 'olddefconfig', 'bzImage'}

# The top of the repository, and what git tracks at its top level.
TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), '..'))


def git(*args):
    return subprocess.run(['git', '-C', TOP] + list(args),
                           capture_output=True, text=True)


def top_entries():
    names = git('ls-files').stdout.split('\n')
    return sorted({n.split('/')[0] for n in names if n})


def make_targets():
    """The targets the top Makefile defines (rules at column 0)."""
    targets = set()
    with open(os.path.join(TOP, 'Makefile'), encoding='utf-8') as f:
        for line in f:
            m = re.match(r'([A-Za-z0-9_. -]+):(?!=)', line)
            if m and not line.startswith('.'):
                targets.update(m.group(1).split())
    return targets


def literal_texts(path):
    """The text of an .rst page's inline literals and literal blocks."""
    with open(path, encoding='utf-8') as f:
        doc = publish_doctree(f.read(), source_path=path, settings_overrides={
            'report_level': 5, 'halt_level': 5})
    return [n.astext() for n in doc.traverse(
        lambda n: isinstance(n, (nodes.literal, nodes.literal_block)))]


def quoted_texts(path):
    """The `quoted` spans and the indented lines of a plain-text file."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    return (re.findall(r'`([^`\n]+)`', text) +
            re.findall(r'^(?: {2,}|\t)(.+)$', text, re.M))


# A make command: at the start of a line or after a shell separator.
# Its words end at a shell separator or at two spaces, which in the
# README's command lists part a command from what it does.
MAKE_RE = re.compile(r'(?:^|[;&|(]|\$)\s*make((?: [^\s;&|)]+)*)', re.M)


def named_targets(text):
    for m in MAKE_RE.finditer(text):
        words = m.group(1).split()
        if '-C' in words or '-f' in words:
            continue
        for w in words:
            if w.startswith('-') or '=' in w:
                continue
            if not re.fullmatch(r'[A-Za-z][A-Za-z0-9_.-]*', w):
                break
            yield w


def named_paths(text, tops):
    first = '|'.join(re.escape(t) for t in tops)
    # Not inside a longer path or a variable, and not a word's end.
    pat = re.compile(r'(?<![\w./~$<>-])((?:%s)(?:/[\w.<>*-]*)*)' % first)
    for m in pat.finditer(text):
        p = m.group(1).rstrip('.')
        # DKMS names a module's version ndk/<version>.
        if re.fullmatch(r'ndk/(\d[\d.]*|<version>)', p):
            continue
        if '/' in p or p in tops:
            yield p


def path_exists(p):
    pattern = re.sub(r'<[^>]*>', '*', p)
    if any(c in pattern for c in '*?['):
        return bool(glob.glob(os.path.join(TOP, pattern)))
    if os.path.lexists(os.path.join(TOP, p)):
        return True
    # A build output: what git ignores need not exist.
    return git('check-ignore', '-q', '--no-index', p).returncode == 0


def check_refs(path, code, prose, targets, tops):
    """Findings for the make targets named in the texts code of path, and
    the paths named in code and prose."""
    out = []
    for text in code:
        for t in named_targets(text):
            if t not in targets and t not in KBUILD_TARGETS:
                out.append('%s: names `make %s`, which the Makefile lacks\n'
                           % (path, t))
    for text in code + prose:
        for p in named_paths(text, tops):
            if not path_exists(p):
                out.append('%s: names %s, which is not in the tree\n'
                           % (path, p))
    return sorted(set(out))


# History: only this page may name commits, dates and issues.
HISTORY = 'changes.rst'
HASH_RE = re.compile(r'(?<![\w.:/-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])'
                     r'[0-9a-f]{7,40}(?![\w/-])')
DATE_RE = re.compile(r'(?<![\w.-])(?:19|20)\d\d-(?:0[1-9]|1[0-2])'
                     r'(?:-(?:0[1-9]|[12]\d|3[01]))?(?![\w-])')
ISSUE_RE = re.compile(r'\b(?:[Ii]ssues?|[Bb]ugs?|PR) #?\d+\b'
                      r'|(?<![\w&#])#\d+\b')

# A measured figure in a --text file: a number with a unit, a ratio as
# the bench prints it, a test count.
MEASURED_RE = re.compile(
    r'\b\d+(?:\.\d+)?\s?(?:s|ms|us|ns|secs?|seconds?|mins?|minutes?|h|'
    r'hours?|[KMGT]i?B|bytes)\b|\b\d+(?:\.\d+)?\s?%|(?<![\d.])\d\.\d{3}\b'
    r'|\b\d+ (?:passed|failed|skipped)\b')

# Each kind of figure and the page that owns it: (what, owner, pattern).
# Another page that matches the pattern states the figure again, where
# it should link to the owner.
FIGURES = [
    ('memory per connection', 'memory.rst',
     re.compile(r'\b\d+ bytes (?:on either side|per end|for both ends)'
                r'|object=connection bytes=\d+|\b\d+ ?(?:B|bytes) per '
                r'(?:ring |queue )?slot')),
    ('the size of ndk\'s structures', 'memory.rst',
     re.compile(r'struct ndk_(?:qp|connector)``\n?\s*(?:-\s*)?\d+')),
    ('a bench bound', 'performance.rst',
     re.compile(r'(?:<=|>=)\s*\d\.\d+|\bbound (?:of )?\d\.\d+')),
    ('a bench ratio', 'performance.rst', re.compile(r'(?<![\d.])\d\.\d{3}\b')),
    ('the gate\'s count of bounds', 'performance.rst',
     re.compile(r'bounds broken, \d+ missing, of \d+')),
    ('a target\'s time', 'testing.rst',
     re.compile(r'(?:make [a-z-]+|\.ci/run)``?(?: [A-Z_]+=\S+)*\s+(?:takes|took'
                r'|runs?|ran)\s+(?:about\s+)?\d+(?:\.\d+)?\s*(?:s|min|minutes'
                r'|seconds)\b')),
    ('a test count', 'testing.rst',
     re.compile(r'\b\d+ passed, \d+ failed')),
]

# Jargon that a page may use only once the glossary defines it.
GLOSSARY = 'glossary.rst'
TERMS = ['antecedent', 'CM', 'DEFER batch', 'DKMS', 'DREQ', 'icount', 'IRD',
         'IRQL', 'iWARP', 'KTAP', 'KUnit', 'LAM', 'MAD', 'MDL', 'MPA',
         'NDKPI', 'NTSTATUS', 'ORD', 'RC', 'RDS', 'REP', 'REQ', 'RNIC',
         'RoCE', 'RTU', 'rxe', 'SGE', 'siw', 'splat', 'TCG',
         'teardown sweep', 'the floor', 'WDK', 'WSK']


def line_of(text, pos):
    return text.count('\n', 0, pos) + 1


def history_findings(path, text):
    if os.path.basename(path) == HISTORY:
        return []
    out = []
    for what, pat in (('a commit hash', HASH_RE), ('a date', DATE_RE),
                      ('an issue number', ISSUE_RE)):
        for m in pat.finditer(text):
            out.append('%s:%d: %s (%s) outside %s\n'
                       % (path, line_of(text, m.start()), what, m.group(0),
                          HISTORY))
    return out


def measured_findings(path, text):
    return ['%s:%d: a measured figure (%s); name the page that owns it\n'
            % (path, line_of(text, m.start()), m.group(0))
            for m in MEASURED_RE.finditer(text)]


def figure_findings(path, text):
    base = os.path.basename(path)
    if base == HISTORY:
        return []
    out = []
    for what, owner, pat in FIGURES:
        if base == owner:
            continue
        for m in pat.finditer(text):
            out.append('%s:%d: states %s (%s), which %s owns; link to it\n'
                       % (path, line_of(text, m.start()), what,
                          ' '.join(m.group(0).split()), owner))
    return out


def report_bounds():
    """The bounds tests/bench/report.py enforces: {figure: bound text}."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'report', os.path.join(TOP, 'tests', 'bench', 'report.py'))
    r = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r)
    out = {'fast-path allocations by ndk.ko': '0'}
    out.update((what, '%s %.2f' % (sense, bound))
               for _, _, _, bound, sense, what, _ in r.TARGETS if bound)
    out.update((what, '%s %.2f' % (sense, bound))
               for _, _, bound, sense, what, _ in r.DETAIL_TARGETS if bound)
    by = {}
    for series, bound in r.CONN_RATE.items():
        by.setdefault(bound, []).append(series)
    out['connection setup rate'] = ', '.join(
        '>= %.2f on %s' % (b, ' and '.join(sorted(v, key=lambda x: [
            int(n) for n in x.split('.')])))
        for b, v in sorted(by.items()))
    for _, bound, relative, what in r.SCALE_TARGETS:
        key = '%s, %d over %d' % (what, r.SCALE_CONNS[1], r.SCALE_CONNS[0])
        out[key] = ("NDK's growth at most %.2f above raw's" if relative
                    else "NDK's growth <= %.2f") % bound
    out['notification, core/NDK'] = '>= %.2f' % r.CORE_NDK[0]
    return out


def bounds_findings(path, text):
    """performance.rst's "Bounds" table against report.py's bounds."""
    m = re.search(r'\nBounds\n-+\n.*?\n   -+\n(.*?)\n\n', text, re.S)
    if not m:
        return ['%s: no "Bounds" table\n' % path]
    # A row is its figure, two spaces or more, its bound; a line that
    # starts blank continues the row above.
    table = {}
    last = None
    for line in m.group(1).split('\n'):
        cells = re.split(r' {2,}', line.strip(), maxsplit=1)
        if line[3:4] == ' ' and last:
            table[last] += ' ' + line.strip()
        elif len(cells) == 2:
            last = cells[0]
            table[last] = cells[1]
    want = report_bounds()
    out = []
    for what in sorted(set(want) | set(table)):
        if table.get(what) != want.get(what):
            out.append('%s: "Bounds" gives %s as %s, tests/bench/report.py '
                       'as %s\n' % (path, what, table.get(what, 'nothing'),
                                    want.get(what, 'nothing')))
    return out


def glossary_terms(path):
    """The terms that glossary.rst's definition list defines."""
    with open(path, encoding='utf-8') as f:
        doc = publish_doctree(f.read(), source_path=path, settings_overrides={
            'report_level': 5, 'halt_level': 5})
    terms = set()
    for n in doc.traverse(nodes.term):
        for t in re.split(r',\s*|\s*[()]\s*', n.astext()):
            if t.strip():
                terms.add(t.strip())
    return terms


def term_findings(path, text, defined):
    if os.path.basename(path) == GLOSSARY:
        return []
    out = []
    for term in TERMS:
        if term in defined:
            continue
        m = re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(term), text)
        if m:
            out.append('%s:%d: uses "%s", which %s does not define\n'
                       % (path, line_of(text, m.start()), term, GLOSSARY))
    return out


def main(args):
    directives.register_directive('toctree', TocTree)
    roles.register_local_role('doc', doc_role)
    texts = []
    paths = []
    while args:
        if args[0] == '--text' and len(args) > 1:
            texts.append(os.path.normpath(args[1]))
            args = args[2:]
        else:
            paths.append(os.path.normpath(args[0]))
            args = args[1:]
    failed = False
    targets = make_targets()
    tops = top_entries()
    for path in paths:
        out = check(path)
        if out:
            sys.stderr.write(out)
            failed = True
    refs = [(p, literal_texts(p), []) for p in paths]
    for p in texts:
        with open(p, encoding='utf-8') as f:
            refs.append((p, quoted_texts(p), [f.read()]))
    for path, code, prose in refs:
        out = check_refs(path, code, prose, targets, tops)
        if out:
            sys.stderr.write(''.join(out))
            failed = True
    glossary = [p for p in paths if os.path.basename(p) == GLOSSARY]
    defined = glossary_terms(glossary[0]) if glossary else set()
    for path in paths + texts:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        out = history_findings(path, text) + figure_findings(path, text) + \
            term_findings(path, text, defined)
        if path in texts:
            out += measured_findings(path, text)
        if os.path.basename(path) == 'performance.rst':
            out += bounds_findings(path, text)
        if out:
            sys.stderr.write(''.join(out))
            failed = True
    for path in paths:
        doc = path[:-len('.rst')]
        if os.path.basename(doc) != 'index' and doc not in listed:
            sys.stderr.write('%s: not listed in any toctree\n' % path)
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
