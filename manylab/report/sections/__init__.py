"""Report sections that apply across workloads: kernel lock paths (any study listing
`plugin.functions`) and the machine model's figures (any study that ran the plugin)."""
