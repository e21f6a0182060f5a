"""Report sections that apply across workloads: kernel lock paths (any study listing
`plugin.functions`), the machine model's figures (any study that ran the plugin) and the
kernel counters over the region of interest (any point with kstats.json)."""
