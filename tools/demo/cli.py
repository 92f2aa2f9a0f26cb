"""What the demo tools' command lines share (corpus.py, expand.py): the
typed failure they print as "error: <code>: <detail>", and their flags,
each of which takes a value and must be given. Standard library only."""

import sys


class Fail(Exception):
    def __init__(self, code, detail):
        super().__init__(detail)
        self.code = code


def parse_flags(argv, names, usage):
    """{flag: value} for every flag in names (the last one wins when a flag
    is repeated), or None after printing usage on stderr: an unknown flag,
    one without a value, or one missing."""
    opts = dict.fromkeys(names)
    i = 0
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            print(usage, file=sys.stderr)
            return None
        opts[argv[i]] = argv[i + 1]
        i += 2
    if any(v is None for v in opts.values()):
        print(usage, file=sys.stderr)
        return None
    return opts
