#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Parse reStructuredText files with docutils; fail on any warning or error.

Usage: docs-check.py FILE.rst...

docutils alone knows neither Sphinx's toctree directive nor its :doc: role,
which Documentation/ uses.  Both get a small stand-in here that checks its
targets exist, so a broken cross-reference is a finding too, as is a page
that no toctree lists (index.rst is the root of its directory).
"""

import io
import os
import re
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


def main(paths):
    directives.register_directive('toctree', TocTree)
    roles.register_local_role('doc', doc_role)
    paths = [os.path.normpath(p) for p in paths]
    failed = False
    for path in paths:
        out = check(path)
        if out:
            sys.stderr.write(out)
            failed = True
    for path in paths:
        doc = path[:-len('.rst')]
        if os.path.basename(doc) != 'index' and doc not in listed:
            sys.stderr.write('%s: not listed in any toctree\n' % path)
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
