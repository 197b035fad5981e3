"""Text the app does not control, made safe to show: what a model or a tool wrote, a provider's error, an imported run.

Streamlit reads Markdown nearly everywhere it shows text (st.markdown, captions, alerts, headers,
widget labels), and its Markdown loads images, makes links and has extensions of its own. Such text
goes through one of these functions first, so that showing it never fetches, links or runs anything:

- `markdown(text)`, a message's text: its formatting (emphasis, headings, lists, tables, code) is
  kept. An image becomes the words `[image: alt <address>]`, a link its text followed by its address.
  Every address (of a link or an image, a bare URL, an e-mail address) is shown as inline code, so
  nothing the text holds is a link. Raw HTML and entities show as written, and so do Streamlit's
  extensions: `:red[...]` and the other directives, `:material/...:` icons, `:streamlit:`, `$...$`.
- `code(text)`: a name, an id or arguments as one inline code span, whatever backticks they hold.
- `fenced(text)`: text with lines of its own (JSON, a tool's output) as a code block, shown as written.
- `inline(text)`: text inside a line the app writes (a title, a model name), kept on that line.
- `block(text)`: text with lines of its own (a provider's error), line by line.
- `plotly(text)`: a name in a Plotly chart, whose labels read a little HTML.
- `plain(text)`: text drawn without Markdown (st.text), its bidi controls shown as escapes.

None of them may go inside a directive's label (`:gray[...]`): Streamlit reads a label's text
again, and the escapes in it do not hold there. `inline` and `block` show the text as written but
for `*`/`_` emphasis. All but `plotly` leave two things as Streamlit draws them: emoji short codes
(`:smile:` shows as the emoji) and typographic arrows (`->` shows as →); neither can fetch or link
anything. Text drawn without Markdown (st.text, st.code, st.json, table cells, select box options)
needs none of this, but for the bidi controls (U+202E and its kin) that make a browser show text in
another order than it is written: `plain` shows them as `\\u202e`.
"""

from __future__ import annotations

import html
import re

# WORD JOINER: invisible, and it breaks the `:material/name:` and `:streamlit:` patterns Streamlit finds in
# the parsed text, where a backslash escape has already been read and so does not help
JOINER = "\u2060"

# A word holding what GitHub-flavoured Markdown links by itself (http(s)://, www., an e-mail address),
# whole, so no part of it is left outside the code span to be linked. A `|`, a backtick, a bracket or
# an angle bracket ends it, so such a code span never holds a table's cell separator or a label's end.
# It is looked for from a word's first character only (the lookbehind): a match from inside a word is one
# from its first character too, and a long word with no address in it is read once, not once a character.
_WORD = "[^\\s<>|`\\[\\]()\"']"
_ADDRESS = f"(?<!{_WORD}){_WORD}*(?:https?://|www\\.|@[-\\w]+\\.[-\\w])[^\\s<>|`\\[\\]]*"
_ADDRESSED = re.compile(f"(?P<address>{_ADDRESS})", re.IGNORECASE)
# an inline image or link; anything fancier (nested brackets, odd destinations) falls through to escaping
_LINKED = re.compile(
    r"(?P<bang>!?)\[(?P<label>[^\[\]\n]*)\]\(\s*"
    r"(?P<dest><[^<>\n]*>|[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
    f"|(?P<address>{_ADDRESS})",
    re.IGNORECASE,
)
_TRAILING = ".,:;!?'\"*_~"

# Streamlit's text directives (`:name`, `:name[label]`, `:name{attributes}`): the ones it draws, by name
_COLOURS = "red|orange|yellow|green|blue|violet|purple|gray|grey|rainbow|primary"
_DIRECTIVE = re.compile(
    rf"(?:(?:{_COLOURS})(?:-background|-badge)?|small|shimmer|help|color)(?![\w-])|[A-Za-z][\w-]*[\[{{]"
)
_SHORTCODE = re.compile(r"material[/_]|streamlit:")  # after a colon: one of Streamlit's icons, or its logo

# the first characters of a line that start a heading, a quote, a list, a rule, a table or a definition
_LINE_START = re.compile(r"([ \t]*)(\d{1,9}(?=[.)])|[#>+*=_~|\[-])")
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# the characters that reorder the text around them: marks, embeddings, overrides and isolates
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BACKTICKS = re.compile(r"`+")


def code(text: str) -> str:
    """Text as one inline code span, on one line, whatever backticks it holds."""
    text = _LINE_BREAK.sub(" ", text)
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    # a space each side is taken off again, so content may start or end with a backtick or a space
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, language: str = "") -> str:
    """Text as a fenced code block, shown as written whatever backticks or fences it holds; `language` is the app's."""
    fence = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def inline(text: str) -> str:
    """Text shown as written inside a line the app composes; line breaks become spaces."""
    out = _line(_LINE_BREAK.sub(" ", text), links=False)
    return out[:-1] + "\\]" if out.endswith("]") else out  # so nothing written after it makes a link


def block(text: str) -> str:
    """Text with lines of its own, shown as written, each line on a line."""
    return "  \n".join(_line(line, links=False) for line in _LINE_BREAK.split(text))


def markdown(text: str) -> str:
    """A message's text as Markdown that keeps its formatting and fetches, links and runs nothing."""
    lines = _LINE_BREAK.split(text)
    out: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.fullmatch(lines[i])
        if opened and not (opened[2][0] == "`" and "`" in opened[3]):
            i = _code_block(lines, i, opened, out)
            continue
        out.append(_line(lines[i], links=True) + ("  " if lines[i].strip() else ""))
        i += 1
    return "\n".join(out)


def plain(text: str) -> str:
    """Text for st.text and other places without Markdown, with each bidi control shown as an escape (`\\u202e`)."""
    return _BIDI.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def plotly(text: str) -> str:
    """A name for a Plotly chart's title, legend or hover text, where `<a href>` and `<br>` are markup."""
    return html.escape(text, quote=False)


# -- the parts ----------------------------------------------------------------------------


def _code_block(lines: list[str], start: int, opened: re.Match[str], out: list[str]) -> int:
    """Copy a fenced code block under a fence of our own; returns the index of the line after it."""
    indent, marker, info = len(opened[1]), opened[2], opened[3]
    closing = re.compile(rf" {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*")
    body: list[str] = []
    i = start + 1
    while i < len(lines) and not closing.fullmatch(lines[i]):
        line = lines[i]
        body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
        i += 1
    longest = max((len(run) for line in body for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    language = re.match(r"[\w+#.-]*", info.strip())[0]  # type: ignore[index]
    out += [fence + language, *body, fence]
    return i + 1


def _line(line: str, *, links: bool) -> str:
    """One line: its code spans kept as they are, the rest escaped; `links` keeps block markers and shows links."""
    head = ""
    if links:
        tildes = re.match(r"([ \t]*)(~~~)", line)  # a deeper tilde fence than the ones copied as code blocks
        if tildes:
            head, line = tildes[1] + "\\~", line[tildes.end(1) + 1 :]
    else:
        marker = _LINE_START.match(line)
        if marker:
            # leading blanks would make an indented code block, which shows escapes as written
            blanks = marker[1].replace(" ", "\u00a0").replace("\t", "\u00a0" * 4)
            head, line = blanks + _escape_marker(marker[2]), line[marker.end() :]
        else:
            stripped = line.lstrip(" \t")
            head, line = "\u00a0" * (len(line) - len(stripped)), stripped
    out = head
    for piece, is_code in _code_spans(line, links=links):
        shown = piece if is_code else _phrase(piece, links=links)
        # two code spans side by side would be one run of backticks: keep them apart
        out += JOINER + shown if out.endswith("`") and shown.startswith("`") else shown
    return out


def _escape_marker(marker: str) -> str:
    return marker + "\\" if marker[0].isdigit() else "\\" + marker


def _code_spans(line: str, *, links: bool) -> list[tuple[str, bool]]:
    """The line cut into text and, in a message, its code spans (a `|` in one would split a table cell)."""
    runs = list(_BACKTICKS.finditer(line)) if links else []
    pieces: list[tuple[str, bool]] = []
    last = 0
    k = 0
    while k < len(runs):
        opener = runs[k]
        closer = next((j for j in range(k + 1, len(runs)) if len(runs[j][0]) == len(opener[0])), None)
        if closer is None or "|" in line[opener.end() : runs[closer].start()]:
            k += 1
            continue
        pieces.append((line[last : opener.start()], False))
        pieces.append((line[opener.start() : runs[closer].end()], True))
        last = runs[closer].end()
        k = closer + 1
    pieces.append((line[last:], False))
    return pieces


def _phrase(text: str, *, links: bool) -> str:
    """Plain text with its addresses as code and, when `links`, its images and links as words."""
    out: list[str] = []
    last = 0
    for found in (_LINKED if links else _ADDRESSED).finditer(text):
        if found["address"] is not None:
            address = _trim(found["address"])
            out += [_escape(text[last : found.start()], links), code(address)]
            last = found.start() + len(address)
            continue
        out.append(_escape(text[last : found.start()], links))
        label = _phrase(found["label"], links=False)
        dest = found["dest"].removeprefix("<").removesuffix(">")
        if found["bang"]:
            out.append(f"\\[image: {label} {code(dest)}\\]" if label else f"\\[image: {code(dest)}\\]")
        else:
            out.append(f"{label} ({code(dest)})" if dest else label)
        last = found.end()
    out.append(_escape(text[last:], links))
    return "".join(out)


def _trim(address: str) -> str:
    """An address without the punctuation that ends the sentence around it."""
    end = len(address)
    while end > 1:
        if address[end - 1] in _TRAILING:
            end -= 1
        elif address[end - 1] == ")" and address.count("(", 0, end) < address.count(")", 0, end):
            end -= 1
        else:
            break
    return address[:end]


def _escape(text: str, brackets: bool) -> str:
    """Escape what could make HTML, a link, code, maths or a directive; `brackets` escapes every bracket."""
    out: list[str] = []
    for i, ch in enumerate(text):
        after = text[i + 1 : i + 2]
        if ch in "\\`<&$":
            out.append("\\" + ch)
        elif ch == "[" and brackets or ch == "]" and (brackets or after in ("(", "[")):
            out.append("\\" + ch)
        elif ch == ":":
            # at the end of the text, whatever comes next (a link's words) might make a directive
            rest = text[i + 1 :]
            directive = not rest or _DIRECTIVE.match(rest)
            out.append(("\\:" if directive else ":") + (JOINER if not rest or _SHORTCODE.match(rest) else ""))
        else:
            out.append(ch)
    return "".join(out)
