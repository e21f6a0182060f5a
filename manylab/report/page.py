"""Writing a report's sections as one HTML page and one Markdown file."""

from __future__ import annotations

import html
from pathlib import Path

from manylab import atomic
from manylab.report.model import Section, Table

STYLE = """
body { font-family: sans-serif; max-width: 1500px; margin: 1.5em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; font-size: 12px; margin: 0.6em 0 1.2em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; position: sticky; top: 0; }
td:first-child, th:first-child { text-align: left; }
tr.failed td { background: #fde2e2; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 13px; color: #555; max-width: 1100px; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 12px; }
.scroll { max-height: 600px; overflow: auto; display: inline-block; }
"""


def _html_table(table: Table, scroll: bool = False) -> str:
    status_col = table.columns.index("status") if "status" in table.columns else -1
    out = [f"<h3>{html.escape(table.title)}</h3>"]
    out.append('<div class="scroll">' if scroll else "<div>")
    out.append('<table data-title="' + html.escape(table.title) + '"><thead><tr>')
    out += [f"<th>{html.escape(c)}</th>" for c in table.columns]
    out.append("</tr></thead><tbody>")
    for row in table.rows:
        failed = status_col >= 0 and row[status_col] not in ("ok", "")
        out.append('<tr class="failed">' if failed else "<tr>")
        out += [f"<td>{html.escape(v)}</td>" for v in row]
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _html_section(section: Section, level: int = 2) -> str:
    out = [f"<h{level}>{html.escape(section.title)}</h{level}>"]
    out += [f"<p>{html.escape(p)}</p>" for p in section.paragraphs]
    if section.links:
        out.append("<ul>" + "".join(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a>'
                                    "</li>" for text, href in section.links) + "</ul>")
    for caption, text in section.listings:
        out.append(f"<p><b>{html.escape(caption)}</b></p><pre>{html.escape(text)}</pre>")
    for figure in section.figures:
        out.append(f'<figure id="{html.escape(figure.name)}"><a href="{html.escape(figure.svg)}">'
                   f'<img src="{html.escape(figure.png)}" alt="{html.escape(figure.title)}">'
                   f"</a><figcaption><b>{html.escape(figure.title)}.</b> "
                   f"{html.escape(figure.caption)} (<a href=\"{html.escape(figure.svg)}\">SVG"
                   "</a>)</figcaption></figure>")
    out += [_html_table(t, scroll=len(t.rows) > 30) for t in section.tables]
    return "\n".join(out)


def write_html(path: Path, title: str, sections: list[Section]) -> None:
    body = "\n".join(_html_section(s) for s in sections)
    atomic.write_text(path, f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
                      f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> str:
    lines = [f"**{table.title}**", "", "| " + " | ".join(map(_md_escape, table.columns)) + " |",
             "|" + " --- |" * len(table.columns)]
    lines += ["| " + " | ".join(map(_md_escape, row)) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def _md_section(section: Section) -> str:
    out = [f"## {section.title}", ""]
    for paragraph in section.paragraphs:
        out += [paragraph, ""]
    if section.links:
        out += [f"- [{text}]({href})" for text, href in section.links] + [""]
    for caption, text in section.listings:
        out += [f"**{caption}**", "", "```", text.rstrip("\n"), "```", ""]
    for figure in section.figures:
        out += [f"![{figure.title}]({figure.png})", "",
                f"*{figure.title}.* {figure.caption} ([SVG]({figure.svg}))", ""]
    out += [_md_table(t) for t in section.tables]
    return "\n".join(out)


def write_markdown(path: Path, title: str, sections: list[Section]) -> None:
    atomic.write_text(path, f"# {title}\n\n" + "\n".join(_md_section(s) for s in sections))
