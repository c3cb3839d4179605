#!/usr/bin/env python3
"""Reference renderer for ferrite's chat-template tests.

Reads a JSON list of cases from the file named on the command line, each
{"template": str, "context": {...}}, renders each with Python's jinja2 in the
environment Hugging Face's apply_chat_template uses (sandboxed, trim_blocks,
lstrip_blocks, loop controls, tojson with ensure_ascii=False, raise_exception,
strftime_now) and prints a JSON list of {"ok": bool, "output"|"error": str}.
strftime_now uses a fixed instant (FERRITE_FIXED_NOW, UTC seconds)."""
import datetime
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = 1721995200  # 2024-07-26 12:00:00 UTC


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.datetime.fromtimestamp(FIXED_NOW, datetime.timezone.utc).strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    env = make_env()
    results = []
    compiled = {}  # compiling is the slow part: once per distinct source
    for case in cases:
        try:
            source = case["template"]
            if source not in compiled:
                compiled[source] = env.from_string(source)
            out = compiled[source].render(**case["context"])
            results.append({"ok": True, "output": out})
        except Exception as e:  # any failure: the C++ side must fail too
            results.append({"ok": False, "error": type(e).__name__ + ": " + str(e)})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
