"""A promotion report page read back (docs/report.md): the HTML parsed into
a small element tree with the standard library's html.parser, and the
helpers report_test.py reads it with. Nothing here knows how tinylm
writes the page beyond the contract's element names and attributes."""

from html.parser import HTMLParser

# Elements without an end tag (HTML's void elements).
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = dict(attrs)
        self.parent = parent
        self.children = []
        self.text_parts = []

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag=None, cls=None, attr=None, **equal):
        """Descendants (and self) with this tag, class, attribute present
        and attribute values (data_stage="x" for data-stage)."""
        want = {k.replace("_", "-"): v for k, v in equal.items()}
        return [e for e in self.iter()
                if (tag is None or e.tag == tag) and (cls is None or cls in e.classes()) and
                (attr is None or attr in e.attrs) and
                all(e.attrs.get(k) == v for k, v in want.items())]

    def find(self, *args, **kwargs):
        found = self.find_all(*args, **kwargs)
        return found[0] if found else None

    def text(self):
        return "".join(self.text_parts) + "".join(c.text() for c in self.children)

    def inside(self, tag=None, cls=None):
        """Whether an ancestor has this tag and class."""
        p = self.parent
        while p is not None:
            if (tag is None or p.tag == tag) and (cls is None or cls in p.classes()):
                return True
            p = p.parent
        return False


class _Parser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", [], None)
        self.cur = self.root
        self.errors = []

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        if tag not in VOID:
            self.cur = e

    def handle_startendtag(self, tag, attrs):  # <rect .../> in SVG
        self.cur.children.append(Element(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        e = self.cur
        while e is not None and e.tag != tag:
            e = e.parent
        if e is None or e.parent is None:
            self.errors.append(f"</{tag}> closes nothing open")
            return
        if e is not self.cur:
            self.errors.append(f"</{tag}> closes <{self.cur.tag}> implicitly")
        self.cur = e.parent

    def handle_data(self, data):
        self.cur.text_parts.append(data)


def parse(html):
    """(root element, [structural errors])."""
    p = _Parser()
    p.feed(html)
    p.close()
    return p.root, p.errors


def number(text):
    """A data- attribute's number as the page prints it (%.17g or an
    integer; "inf" for a non-finite ratio), or None when it is not one."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
