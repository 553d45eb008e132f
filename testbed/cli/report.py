"""A sweep's report, from its files alone (no root, no fabric): a table in the
terminal, PNG figures (figures.py) and one self-contained HTML page
(DIR/report.html: tables, figures embedded as data URIs, provenance). The
page has no script, so it has nothing to fail in a browser."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from ..measure.sweep_stats import Sweep, growths, load, provenance, summarise, varying
from .figures import figures, growth_rows

KEY_LABELS = {
    "topology": "topology",
    "k": "k",
    "workload": "workload",
    "size_bytes": "size",
    "load": "load",
    "cell_failure": "link failures",
    "cell_payload": "payload",
    "cell_cc": "congestion control",
    "cell_mix": "mix",
    "cell_label": "scheme",
}


def _size(v: Any) -> str:
    v = int(v)
    return f"{v // (1 << 20)} MB" if v % (1 << 20) == 0 else f"{v // 1024} KB" if v % 1024 == 0 else f"{v} B"


def _fmt_key(key: str, v: Any) -> str:
    if key == "size_bytes":
        return _size(v)
    if key in ("load", "cell_failure"):
        return f"{float(v):g}"
    return str(v)


def _pct(mean: float, sem: float, n: int = 2) -> str:
    if math.isnan(mean):
        return "no valid run"
    return f"{100 * mean:.2f} %" if n < 2 else f"{100 * mean:.2f} +- {100 * sem:.2f} %"


def table_rows(sw: Sweep) -> tuple[list[str], list[list[str]]]:
    """The summary as text: one row per cell, the keys that vary and the scheme first."""
    summary = summarise(sw.rows)
    keys = [k for k in varying(sw.rows) if k != "cell_label"] + ["cell_label"]
    head = [KEY_LABELS[k] for k in keys] + [
        "runs (valid, left out)",
        "CCT increase, mean +- SEM",
        "largest switch queue (pkts)",
        "utilisation",
    ]
    body = []
    for _, r in summary.iterrows():
        body.append(
            [_fmt_key(k, r[k]) for k in keys]
            + [
                f"{r['runs']} ({r['valid']}, {r['left_out']})",
                _pct(r["cct_increase_mean"], r["cct_increase_sem"], int(r["valid"])),
                "-" if math.isnan(r["max_queue_pkts_mean"]) else f"{r['max_queue_pkts_mean']:.1f}",
                "-" if math.isnan(r["utilisation_mean"]) else f"{100 * r['utilisation_mean']:.1f} %",
            ]
        )
    return head, body


def no_growth(sw: Sweep) -> str:
    """Why a sweep has no exponent."""
    if sw.rows["size_bytes"].nunique() < 2:
        return "The sweep has one message size: no exponent (it needs two, and a 95 % interval three runs)."
    return "No scheme has valid runs with a queue at two message sizes: no exponent."


def growth_table(sw: Sweep) -> tuple[list[str], list[list[str]]]:
    head = ["scheme", "metric", "exponent", "95 % interval", "runs", "sizes"]
    body = [
        [
            g["scheme"],
            g["metric"],
            f"{g['exponent']:.3f}",
            "- (two runs)" if math.isnan(g["ci95_low"]) else f"[{g['ci95_low']:.3f}, {g['ci95_high']:.3f}]",
            str(g["runs"]),
            str(g["sizes"]),
        ]
        for g in growth_rows(growths(sw.rows))
    ]
    return head, body


def render(path: Path, console: Console, html: bool = True) -> Path | None:
    """Print the tables, draw the figures and (unless html is False) write DIR/report.html; returns its path."""
    sw = load(path)
    head, body = table_rows(sw)
    t = Table(title=f"{path}: {len(sw.rows)} runs")
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i < len(head) - 4 else "right")
    for r in body:
        t.add_row(*r)
    console.print(t)
    ghead, gbody = growth_table(sw)
    if gbody:
        g = Table(title="growth with the message size: metric ~ size^exponent (least squares on log-log axes)")
        for h in ghead:
            g.add_column(h)
        for r in gbody:
            g.add_row(*r)
        console.print(g)
    figs = figures(sw, Path(path) / "figures")
    pd.DataFrame(growth_rows(growths(sw.rows))).to_csv(Path(path) / "growth.csv", index=False)
    summarise(sw.rows).to_csv(Path(path) / "summary.csv", index=False)
    invalid = sw.rows[~sw.rows["fidelity_valid"].astype(bool)]
    if len(invalid):
        console.print(
            f"[bold red]{len(invalid)} run(s) invalid[/] (left out of the means): "
            + "; ".join(f"{c}: {r}" for c, r in zip(invalid["cell"], invalid["fidelity_reasons"], strict=False))[:2000]
        )
    console.print(f"figures in {Path(path) / 'figures'} ({len(figs)})")
    if not html:
        return None
    out = Path(path) / "report.html"
    out.write_text(page(sw, (head, body), (ghead, gbody), figs, invalid))
    console.print(f"report: {out}")
    return out


def _html_table(head: list[str], body: list[list[str]], cls: str) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>'


def page(
    sw: Sweep,
    summary: tuple[list[str], list[list[str]]],
    growth: tuple[list[str], list[list[str]]],
    figs: list[tuple[str, Path]],
    invalid: pd.DataFrame,
) -> str:
    prov = provenance(sw)
    m = sw.matrix
    matrix_items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in m.items())
    prov_items = "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in prov.items() if k != "packages"
    )
    pkgs = ", ".join(f"{k} {v}" for k, v in (prov.get("packages") or {}).items())
    fig_html = ""
    for caption, p in figs:
        data = base64.b64encode(Path(p).read_bytes()).decode()
        fig_html += (
            f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    bad = "".join(
        f"<li>{html.escape(str(c))}: {html.escape(str(r))}</li>"
        for c, r in zip(invalid["cell"], invalid["fidelity_reasons"], strict=False)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>testbed sweep: {html.escape(str(sw.path.name))}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1200px; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }}
th {{ background: #eee; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
figcaption {{ font-style: italic; }}
</style></head><body>
<h1>Sweep {html.escape(str(sw.path.name))}</h1>
<p>{len(sw.rows)} runs; means and standard errors over the valid seeds of each cell, invalid runs left out and
counted.</p>
<h2>Results</h2>
{_html_table(*summary, "summary")}
<h2>Growth with the message size</h2>
{_html_table(*growth, "growth") if growth[1] else f"<p>{html.escape(no_growth(sw))}</p>"}
<h2>Figures</h2>
{fig_html}
<h2>Invalid runs</h2>
{"<ul>" + bad + "</ul>" if bad else "<p>None.</p>"}
<h2>Matrix</h2><ul>{matrix_items}</ul>
<h2>Provenance</h2><ul>{prov_items}<li><b>packages</b>: {html.escape(pkgs)}</li></ul>
</body></html>
"""


def render_figures(path: Path, panels: list[tuple[Any, str, Path]], console: Console) -> Path:
    """DIR/report.html of `testbed paper FIG` with several panels, or of `testbed paper all`: each figure's
    panels in order, each with its table and figures (each panel's own report is in its directory)."""
    sections, seen = "", set()
    for fig, panel, d in panels:
        if fig.name not in seen:
            seen.add(fig.name)
            diffs = "".join(f"<li>{html.escape(x)}</li>" for x in fig.differs)
            sections += f'<h2 id="{html.escape(fig.name)}">{html.escape(fig.reproduces)}</h2>' + (
                f"<p>Differs from the paper:</p><ul>{diffs}</ul>" if diffs else ""
            )
        caption = next((p.caption for p in fig.panels if p.name == panel), "")
        try:
            sw = load(d)
        except Exception:
            sections += f"<h3>{html.escape(caption)}</h3><p>No finished run yet.</p>"
            continue
        head, body = table_rows(sw)
        figs = figures(sw, d / "figures")
        imgs = "".join(
            f'<figure><img alt="{html.escape(c)}" src="data:image/png;base64,'
            f'{base64.b64encode(Path(p).read_bytes()).decode()}"><figcaption>{html.escape(c)}</figcaption>'
            f"</figure>"
            for c, p in figs
        )
        sections += f"<h3>{html.escape(caption)}</h3>{_html_table(head, body, 'summary')}{imgs}"
    out = Path(path) / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>testbed: the paper's figures</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; vertical-align: top; }}
th {{ background: #eee; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
figcaption {{ font-style: italic; }}
</style></head><body>
<h1>The paper's figures</h1>
{sections}
</body></html>
""")
    console.print(f"report: {out}")
    return out


VERDICT_COLOURS = {
    "agrees": "#d7f5d7",
    "disagrees": "#f8d0d0",
    "not comparable": "#fff3c4",
    "not decided": "#f3e3f8",
    "pending": "#dde8fb",
    "no data": "#eee",
}


def render_claims(path: Path, results: list[dict[str, Any]], console: Console) -> Path:
    """DIR/report.html of `testbed paper claims`: the claims first (verdict, value, rule, what was measured),
    then each experiment's table and figures (its own sweep report is in DIR/experiments/NAME/)."""
    from ..run.claims import experiments, format_value

    ex = experiments()
    rows = []
    for r in results:
        colour = VERDICT_COLOURS.get(r["verdict"], "#fff")
        rows.append(
            f"<tr><td>{html.escape(r['id'])}</td><td>{html.escape(r['section'])}</td>"
            f'<td class="l">{html.escape(r["statement"])}</td><td>{html.escape(r["paper"])}</td>'
            f"<td>{html.escape(format_value(r))}</td>"
            f'<td style="background:{colour}"><b>{html.escape(r["verdict"])}</b></td>'
            f'<td class="l">{html.escape(r["rule"])}</td>'
            f'<td class="l">{html.escape(r["detail"])}{"<br><i>" + html.escape(r["notes"]) + "</i>" if r["notes"] else ""}'
            f"</td></tr>"
        )
    sections = ""
    for name in dict.fromkeys(n for r in results for n in r["experiments"]):
        d = Path(path) / "experiments" / str(name)
        try:
            sw = load(d)
        except Exception:
            sections += f"<h3>{html.escape(str(name))}</h3><p>No finished run yet.</p>"
            continue
        head, body = table_rows(sw)
        figs = figures(sw, d / "figures")
        imgs = "".join(
            f'<figure><img alt="{html.escape(c)}" src="data:image/png;base64,'
            f'{base64.b64encode(Path(p).read_bytes()).decode()}"><figcaption>{html.escape(c)}</figcaption>'
            f"</figure>"
            for c, p in figs
        )
        sections += (
            f"<h3>{html.escape(str(name))}: {html.escape(ex[str(name)].what if name in ex else '')}</h3>"
            f"{_html_table(head, body, 'summary')}{imgs}"
        )
    out = Path(path) / "report.html"
    out.write_text(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>testbed: the paper's claims</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; vertical-align: top; }}
td.l {{ text-align: left; }}
th {{ background: #eee; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
</style></head><body>
<h1>The paper's claims</h1>
<section id="claims"><h2>Claims</h2>
<table class="claims"><thead><tr><th>claim</th><th>section</th><th>statement</th><th>the paper</th><th>here</th>
<th>verdict</th><th>rule</th><th>measured</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>
<h2>Experiments</h2>
{sections}
</body></html>
""")
    console.print(f"report: {out}")
    return out
