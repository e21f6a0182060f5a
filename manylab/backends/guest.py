"""What every guest kernel is told, on either backend."""

# Defaults that let 64-255 vCPU guests boot on 2 host cores under TCG, where vCPUs starve each
# other for seconds: no lockup watchdogs, long RCU stall timeouts, a trusted TSC.
LAB_CMDLINE = (
    "panic=-1 nokaslr nowatchdog loglevel=5 mitigations=off "
    "rcupdate.rcu_cpu_stall_timeout=300 rcupdate.rcu_cpu_stall_suppress_at_boot=1 "
    "workqueue.watchdog_thresh=0"
)
# The guest stops at its ready point for the backend to save it (a QEMU snapshot, a gem5
# checkpoint), and a restore reads its run script afterwards (buildroot-overlay/init).
READY_POINT_CMDLINE = "manylab.snapshot=1"
