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
