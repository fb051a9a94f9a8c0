"""A small self-contained HTML rendering of an executed notebook (no nbconvert): markdown
cells (a common subset), code cells with their source, streams, errors, and rich outputs
(image/png as data URIs, text/html as is, else text/plain)."""
from __future__ import annotations

import html
import re
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1100px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
.cell { margin: 1.2em 0; }
.prompt { color: #888; font: 12px monospace; margin-bottom: 2px; }
pre { margin: 0; padding: .6em .8em; overflow-x: auto; font-size: 13px; white-space: pre-wrap; }
.source pre { background: #f5f7fa; border: 1px solid #dde2e8; border-radius: 4px; }
.output { margin-top: .3em; padding-left: .5em; border-left: 3px solid #e6e9ee; }
.stderr pre { background: #fdecea; }
.error pre { background: #fdecea; color: #8a1f11; }
.output img { max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #dde2e8; padding: 3px 8px; }
th { background: #f5f7fa; }
code { background: #f1f3f5; padding: 0 3px; border-radius: 3px; }
"""


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _inline(text: str) -> str:
    """Escape and render `code`, **bold**, *italic* and [links](url)."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            out.append(f"<code>{html.escape(p[1:-1])}</code>")
            continue
        s = html.escape(p)
        s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
        s = re.sub(r"(?<!\*)\*(?!\s)(.+?)(?<!\s)\*(?!\*)", r"<i>\1</i>", s)
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
        out.append(s)
    return "".join(out)


def markdown_to_html(md: str) -> str:
    """Headings, paragraphs, bullet and numbered lists, fenced code and inline markup."""
    out: list[str] = []
    para: list[str] = []
    lst: list[str] | None = None
    lst_tag = "ul"
    lines = md.splitlines()
    i = 0

    def flush() -> None:
        nonlocal lst
        if para:
            out.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()
        if lst is not None:
            out.append(f"<{lst_tag}>" + "".join(f"<li>{_inline(x)}</li>" for x in lst) + f"</{lst_tag}>")
            lst = None

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                block.append(lines[i])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(block))}</code></pre>")
        elif m := re.match(r"(#{1,6})\s+(.*)", stripped):
            flush()
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif m := re.match(r"([-*]|\d+\.)\s+(.*)", stripped):
            tag = "ol" if m.group(1)[0].isdigit() else "ul"
            if para or (lst is not None and tag != lst_tag):
                flush()
            if lst is None:
                lst, lst_tag = [], tag
            lst.append(m.group(2))
        elif not stripped:
            flush()
        elif lst is not None and line.startswith((" ", "\t")):
            lst[-1] += " " + stripped
        else:
            if lst is not None:
                flush()
            para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


def _output_html(output: dict) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        cls = "stderr" if output.get("name") == "stderr" else "stdout"
        return f"<div class='{cls}'><pre>{html.escape(_ANSI.sub('', _text(output.get('text', ''))))}</pre></div>"
    if kind == "error":
        tb = "\n".join(_ANSI.sub("", line) for line in output.get("traceback", []))
        return f"<div class='error'><pre>{html.escape(tb)}</pre></div>"
    data = output.get("data", {})
    if "image/png" in data:
        b64 = _text(data["image/png"]).replace("\n", "")
        return f"<div><img src='data:image/png;base64,{b64}'></div>"
    if "text/html" in data:
        return f"<div>{_text(data['text/html'])}</div>"
    if "text/plain" in data:
        return f"<div><pre>{html.escape(_ANSI.sub('', _text(data['text/plain'])))}</pre></div>"
    return ""


def notebook_to_html(nb: Any, title: str = "notebook") -> str:
    """The whole notebook as one HTML document (images embedded)."""
    body: list[str] = []
    for cell in nb["cells"]:
        source = _text(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            body.append(f"<div class='cell markdown'>{markdown_to_html(source)}</div>")
        elif cell["cell_type"] == "code":
            n = cell.get("execution_count")
            prompt = f"In [{n if n is not None else ' '}]:"
            outs = "".join(_output_html(o) for o in cell.get("outputs", []))
            body.append(f"<div class='cell code'><div class='prompt'>{prompt}</div>"
                        f"<div class='source'><pre>{html.escape(source)}</pre></div>"
                        + (f"<div class='output'>{outs}</div>" if outs else "") + "</div>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
