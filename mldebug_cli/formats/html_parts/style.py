"""The page's only stylesheet, inlined: system fonts, no external resource of any kind."""

from __future__ import annotations

CSS = """
:root { --err: #b3261e; --warn: #9a6700; --info: #0b6bcb; --ok: #1a7f37; --line: #d0d7de; --soft: #f6f8fa;
        --trained: #d3f3da; --trained-edge: #2da44e; --masked: #eceff1; --masked-ink: #6e7781; --special: #8250df; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1f2328; }
main, header.top { max-width: 1200px; margin: 0 auto; padding: 0 20px; }
h1 { font-size: 22px; margin: 16px 0 6px; } h2 { font-size: 18px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 14px 0 6px; } h4 { font-size: 13px; margin: 10px 0 4px; color: #57606a; }
code, pre, .chips, .tok { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
a { color: var(--info); }
header.top { border-bottom: 3px solid var(--line); padding-bottom: 10px; }
header.top.verdict-error { border-color: var(--err); } header.top.verdict-warning { border-color: var(--warn); }
header.top.verdict-ok { border-color: var(--ok); }
.verdict { display: inline-block; font-weight: 700; font-size: 15px; padding: 2px 10px; border-radius: 4px; color: #fff; background: var(--ok); }
.verdict-error .verdict { background: var(--err); } .verdict-warning .verdict { background: var(--warn); }
.counts { display: inline-flex; gap: 8px; margin-left: 10px; }
.count { padding: 1px 8px; border-radius: 10px; border: 1px solid var(--line); }
.sev-error .sev, .count.error { color: var(--err); font-weight: 600; }
.sev-warning .sev, .count.warning { color: var(--warn); font-weight: 600; }
.sev-info .sev, .count.info { color: var(--info); font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.facts dt { color: #57606a; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
nav.sections { margin: 8px 0; } nav.sections a { margin-right: 14px; }
section.check { border-left: 4px solid var(--line); padding: 2px 12px; margin: 10px 0; background: var(--soft); }
section.check.sev-error { border-color: var(--err); } section.check.sev-warning { border-color: var(--warn); }
section.check.sev-info { border-color: var(--info); }
section.check:target, article:target { outline: 2px solid var(--info); }
.explain { margin: 4px 0; } .hint { color: var(--ok); margin: 4px 0; }
ul.where { margin: 4px 0; padding-left: 18px; } ul.where li { overflow-wrap: anywhere; }
.passed { color: #57606a; }
.cut { color: #57606a; font-style: italic; }
article.row, article.probe { border: 1px solid var(--line); border-radius: 6px; padding: 4px 14px 10px; margin: 14px 0; }
article.row.flagged { border-left: 4px solid var(--err); }
.meta { color: #57606a; font-weight: 400; font-size: 13px; }
.badge { display: inline-block; font-size: 12px; padding: 0 6px; border-radius: 4px; margin-left: 4px; text-decoration: none;
         border: 1px solid currentColor; }
.badge.sev-error { color: var(--err); } .badge.sev-warning { color: var(--warn); } .badge.sev-info { color: var(--info); }
.error-text { color: var(--err); }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 8px; white-space: pre-wrap;
      overflow-wrap: anywhere; margin: 4px 0; }
.ws { color: #afb8c1; }
.special { color: var(--special); font-weight: 700; }
.legend span { margin-right: 10px; }
.chips { line-height: 1.9; }
.tok { display: inline-block; white-space: pre; border-radius: 3px; padding: 0 2px; margin: 1px 1px 0 0; border: 1px solid transparent; }
.tok.t { background: var(--trained); border-color: var(--trained-edge); }
.tok.m { background: var(--masked); color: var(--masked-ink); }
.tok.sp { font-weight: 700; color: var(--special); }
.tok.diff { outline: 2px solid var(--special); }
.tok .ws { color: inherit; opacity: .55; }
#show-ids { position: fixed; top: 11px; right: 20px; z-index: 3; margin: 0; }
label.show-ids { position: fixed; top: 6px; right: 12px; z-index: 2; background: #fff; border: 1px solid var(--line);
                 border-radius: 4px; padding: 2px 30px 2px 8px; cursor: pointer; }
#show-ids:checked ~ main .tok::after { content: attr(data-id); font-size: 10px; color: #57606a; margin-left: 2px;
                                       vertical-align: sub; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
mark.del { background: #ffd7d5; } mark.ins { background: #ccffd8; }
mark.gap { display: inline-block; width: 3px; height: 1.1em; padding: 0; background: #cf222e; vertical-align: text-bottom; }
.same { color: var(--ok); } .differs { color: var(--err); font-weight: 600; }
svg.chart { background: #fff; border: 1px solid var(--line); border-radius: 4px; max-width: 100%; height: auto; }
svg.chart text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: #57606a; }
svg .axis { stroke: #8c959f; } svg .grid { stroke: #eaeef2; }
svg .bar { fill: #54aeff; } svg .limit { stroke: var(--err); stroke-dasharray: 4 3; stroke-width: 1.5; }
svg .curve { fill: none; stroke: #0969da; stroke-width: 2; }
svg .finding-range { fill: var(--warn); opacity: 0.18; }
svg .warmup-end { stroke: var(--warn); stroke-dasharray: 5 3; stroke-width: 1.5; }
svg .peak { fill: var(--err); } svg .final { fill: #57606a; }
svg .logged circle { fill: #fb8f44; fill-opacity: .8; }
svg text.mark { fill: #1f2328; font-weight: 600; }
footer { max-width: 1200px; margin: 24px auto; padding: 8px 20px; color: #57606a; border-top: 1px solid var(--line); font-size: 12px; }
"""
