"""Study reports: records from the point folders, plot sets per workload kind, HTML + Markdown.

`manylab report runs/<study>` -> runs/<study>/report/{index.html, report.md, *.png, *.svg};
`manylab compare runs/A runs/B` -> a side-by-side page of matched points with ratios.
"""
