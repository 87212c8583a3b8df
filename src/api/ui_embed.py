#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Embed the web inspector's files (ui/) into the binary: give every asset a
content-hashed name, rewrite the references to them, make a gzip rendering
of each file, and write a C file with the table src/api/ui.c serves
(struct hk_ui_file, src/api/ui.h). docs/ui.md describes the result.

usage: ui_embed.py out.c ui/index.html ui/app.js ui/app.css ui/icon.svg

The first file is the page (served at /ui and /ui/); each other one is
served at /ui/assets/<stem>.<first 12 hex of its SHA-256>.<ext>. Every
occurrence of /ui/assets/<plain name> in the page, a stylesheet or a script
is rewritten to the hashed name (an asset's hash covers its rewritten
bytes, so assets are hashed in the order their references need); a plain
name that is not one of the files, or references that go round in a
circle, fail the build. So does a gzip total over BUDGET bytes (the issue's
60 KB). The output depends on the inputs only: same files, same bytes.
"""
import gzip
import hashlib
import os
import re
import sys

BUDGET = 61440
PREFIX = b'/ui/assets/'
REF = re.compile(rb'/ui/assets/([A-Za-z0-9][A-Za-z0-9._-]*)')
TYPES = {
    '.html': 'text/html; charset=utf-8',
    '.js': 'text/javascript; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.svg': 'image/svg+xml',
    '.json': 'application/json',
    '.txt': 'text/plain; charset=utf-8',
    '.png': 'image/png',
    '.ico': 'image/x-icon',
    '.woff2': 'font/woff2',
}
# Files whose text may name other assets (the rest are copied as they are).
REWRITTEN = {'.html', '.css', '.js'}
PAGE_CACHE = 'no-cache'
ASSET_CACHE = 'public, max-age=31536000, immutable'


def fail(msg):
    sys.stderr.write(f'ui_embed: {msg}\n')
    sys.exit(1)


def c_bytes(name, data):
    rows = []
    for i in range(0, len(data), 16):
        rows.append('    ' + ', '.join(f'0x{b:02x}' for b in data[i:i + 16]) + ',')
    # One extra byte: C forbids an empty array, and a NUL costs nothing.
    rows.append('    0x00,')
    return f'static const unsigned char {name}[] = {{\n' + '\n'.join(rows) + '\n};\n'


def c_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def main():
    if len(sys.argv) < 3:
        fail('usage: ui_embed.py out.c page.html [asset ...]')
    dst, page, assets = sys.argv[1], sys.argv[2], sys.argv[3:]
    raw = {}
    for path in [page] + assets:
        name = os.path.basename(path)
        stem, ext = os.path.splitext(name)
        if ext not in TYPES:
            fail(f'{path}: no content type for "{ext}" files')
        if name in raw:
            fail(f'{path}: two files named {name}')
        try:
            with open(path, 'rb') as f:
                raw[name] = f.read()
        except OSError as e:
            fail(f'{path}: {e.strerror}')
    page_name = os.path.basename(page)
    asset_names = [os.path.basename(a) for a in assets]

    def refs(name):
        if os.path.splitext(name)[1] not in REWRITTEN:
            return []
        out = []
        for m in REF.finditer(raw[name]):
            ref = m.group(1).decode('ascii')
            if ref not in asset_names:
                fail(f'{name} names /ui/assets/{ref}, which is not one of the embedded files '
                     f'({", ".join(asset_names) or "none"})')
            out.append(ref)
        return out

    served = {}   # plain asset name -> hashed URL path
    final = {}    # name -> rewritten bytes

    def rewrite(name):
        def sub(m):
            return served[m.group(1).decode('ascii')].encode('ascii')
        return REF.sub(sub, raw[name]) if os.path.splitext(name)[1] in REWRITTEN else raw[name]

    # Hash the assets in an order where each one's references are already
    # hashed (at most len(assets) rounds; what is left after is a circle).
    pending = list(asset_names)
    while pending:
        ready = [n for n in pending if all(r in served for r in refs(n))]
        if not ready:
            fail('these assets name each other in a circle: ' + ', '.join(sorted(pending)))
        for n in ready:
            final[n] = rewrite(n)
            stem, ext = os.path.splitext(n)
            h = hashlib.sha256(final[n]).hexdigest()[:12]
            served[n] = f'/ui/assets/{stem}.{h}{ext}'
            pending.remove(n)
    refs(page_name)
    final[page_name] = rewrite(page_name)

    order = [page_name] + asset_names
    rows = []
    body = []
    total_id = total_gz = 0
    for i, n in enumerate(order):
        data = final[n]
        gz = gzip.compress(data, 9, mtime=0)
        digest = hashlib.sha256(data).hexdigest()
        total_id += len(data)
        total_gz += len(gz)
        body.append(c_bytes(f'f{i}', data))
        body.append(c_bytes(f'g{i}', gz))
        path = '/ui' if n == page_name else served[n]
        ctype = TYPES[os.path.splitext(n)[1]]
        cache = PAGE_CACHE if n == page_name else ASSET_CACHE
        etag = f'"{digest[:20]}"'
        etag_gz = f'"{digest[:20]}-gz"'
        rows.append(f'    {{{c_str(path)}, {len(path)}, {c_str(n)}, {c_str(ctype)}, {c_str(cache)},\n'
                    f'     f{i}, {len(data)}, g{i}, {len(gz)}, {c_str(etag)}, {c_str(etag_gz)}}},')
        print(f'ui_embed: {path:40} {len(data):7} bytes, gzip {len(gz):6}')
    print(f'ui_embed: total {total_id} bytes, gzip {total_gz} of the {BUDGET} allowed')
    if total_gz > BUDGET:
        fail(f'the inspector is {total_gz} bytes gzip-compressed, over the budget of {BUDGET} '
             f'(60 KB, issue #17): make ui/ smaller')

    out = ['/* Generated by src/api/ui_embed.py from ui/. Do not edit. */',
           '#include <stddef.h>', '', '#include "api/ui.h"', '']
    out.extend(body)
    out.append(f'const struct hk_ui_file hk_ui_files[] = {{\n' + '\n'.join(rows) + '\n};')
    out.append(f'const size_t hk_ui_nfiles = {len(order)};')
    out.append(f'const size_t hk_ui_gzip_total = {total_gz};')
    text = '\n'.join(out) + '\n'
    # Written whole or not at all: a failed build leaves no half file.
    tmp = dst + '.tmp'
    with open(tmp, 'w', encoding='ascii') as f:
        f.write(text)
    os.replace(tmp, dst)


if __name__ == '__main__':
    main()
