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
    for path in paths:
        doc = path[:-len('.rst')]
        if os.path.basename(doc) != 'index' and doc not in listed:
            sys.stderr.write('%s: not listed in any toctree\n' % path)
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
