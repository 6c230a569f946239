"""CSS shared by the widgets and the HTML reports (no widget imports here)."""

STYLE = """
<style>
.gc-table { border-collapse: collapse; font-size: 12px; font-family: var(--jp-ui-font-family, sans-serif); }
.gc-table th { background: #f0f3f6; text-align: left; padding: 3px 8px; border-bottom: 2px solid #c8d1da; position: sticky; top: 0; }
.gc-table td { padding: 2px 8px; border-bottom: 1px solid #e5e9ee; }
.gc-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
.gc-table tr.gc-picked td { background: #fff6d6; }
.gc-msg { padding: 6px 10px; border-radius: 4px; margin: 4px 0; }
.gc-msg.gc-error { background: #fdecee; color: #b00020; border-left: 4px solid #b00020; }
.gc-msg.gc-info { background: #eef5fb; color: #1f5f99; border-left: 4px solid #1f5f99; }
.gc-findings { margin: 4px 0; padding-left: 18px; font-size: 13px; }
.gc-ok { color: #2e7d32; }
.gc-kv { font-size: 13px; }
.gc-src { color: #555; font-size: 12px; }
.gc-kv b { display: inline-block; min-width: 190px; }
</style>
"""

#: The design document's CSS (report HTML and PDF): A4 pages, a page break before each
#: section, figures as vectors scaled to the page, nothing of the notebook's chrome printed.
DOCUMENT_STYLE = """
<style>
@page { size: A4; margin: 14mm 14mm 16mm 14mm; }
.gc-doc, .gc-summary, .gc-section { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #1b1f24;
  font-size: 13px; line-height: 1.4; }
.gc-summary h1 { font-size: 24px; margin: 0 0 4px; }
.gc-lede { font-size: 14px; color: #333; margin: 0 0 6px; }
.gc-section h2, .gc-summary h2 { font-size: 19px; border-bottom: 2px solid #76b900; padding-bottom: 2px; margin: 10px 0 6px; }
.gc-section h3, .gc-summary h3 { font-size: 14px; margin: 10px 0 4px; }
.gc-kf-groups { display: flex; flex-wrap: wrap; gap: 10px; }
.gc-kf-group { flex: 1 1 200px; border: 1px solid #d8dee4; border-radius: 4px; padding: 4px 8px; }
.gc-kf-group h3 { margin: 2px 0 4px; color: #2b5d12; }
.gc-kf { display: flex; justify-content: space-between; gap: 6px; border-bottom: 1px dotted #e0e4e8; padding: 1px 0; font-size: 12px; }
.gc-kf-value { font-weight: bold; text-align: right; font-variant-numeric: tabular-nums; }
.gc-status { margin: 2px 0; font-size: 12px; color: #444; }
.gc-findings-list { margin: 4px 0; padding-left: 18px; font-size: 12px; }
.gc-findings-list li { margin-bottom: 3px; }
.gc-sev-error b:first-child { color: #b00020; }
.gc-sev-warning b:first-child { color: #a15c00; }
.gc-sev-info b:first-child { color: #1f5f99; }
.gc-fix { color: #333; }
.gc-code { color: #777; font-size: 10px; }
.gc-figure { margin: 6px 0; break-inside: avoid; page-break-inside: avoid; }
.gc-figure svg { max-width: 100%; height: auto; }
.gc-numbers td:first-child, .gc-table td, .gc-table th { text-align: left !important; }
.gc-numbers td:first-child { min-width: 240px; }
.gc-table td.num { text-align: right !important; }
.gc-table { border-collapse: collapse; font-size: 12px; }
.gc-table th { background: #f0f3f6; text-align: left; padding: 3px 8px; border-bottom: 2px solid #c8d1da; }
.gc-table td { padding: 2px 8px; border-bottom: 1px solid #e5e9ee; vertical-align: top; }
.gc-table td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.gc-table tr { break-inside: avoid; page-break-inside: avoid; }
.gc-appendix td.gc-src { font-size: 10px; color: #555; }
.gc-src { color: #555; font-size: 11px; }
.gc-msg.gc-error { background: #fdecee; color: #b00020; border-left: 4px solid #b00020; padding: 6px 10px; }
.gc-compare td.num { min-width: 90px; }
@media print {
  .gc-section { break-before: page; page-break-before: always; }
  .jp-Cell, .jp-OutputArea, .jp-OutputArea-child, .jp-OutputArea-output, .jp-Cell-outputWrapper,
  .jp-Cell-outputArea, .jp-RenderedHTMLCommon, .jp-Notebook { display: block !important; overflow: visible !important;
    padding: 0 !important; margin: 0 !important; }
  .jp-OutputPrompt, .jp-InputPrompt, .jp-Collapser { display: none !important; }
  body { margin: 0 !important; }
}
</style>
"""
