"""Published figures from the project's source papers (FinerLRU, LDU, the mobile PCM study).

Each value is drawn beside ours, labelled "published (paper, machine)". Only numbers the papers
state are here; none is read off a figure.
"""

from __future__ import annotations

from dataclasses import dataclass

MMF_PAPER = "MMF, KIISE 2003"
FINERLRU_PAPER = "FinerLRU, KIPS 2023"


@dataclass(frozen=True)
class Published:
    paper: str
    machine: str
    metric: str
    low: float   # a single value has low == high
    high: float
    note: str = ""

    @property
    def value(self) -> float:
        return (self.low + self.high) / 2

    @property
    def label(self) -> str:
        return f"published ({self.paper}, {self.machine})"

    def text(self, unit: str = "%") -> str:
        span = (f"{self.low:g}{unit}" if self.low == self.high
                else f"{self.low:g}-{self.high:g}{unit}")
        return f"{span} ({self.paper}, {self.machine}{'; ' + self.note if self.note else ''})"


# Mean gain of mmf over normal, all sizes and paths (percent).
MMF_GAIN = (
    Published(MMF_PAPER, "SUN Solaris", "mmf_gain_pct", 47, 47),
    Published(MMF_PAPER, "IBM AIX", "mmf_gain_pct", 24, 24),
    Published(MMF_PAPER, "Digital UNIX", "mmf_gain_pct", 32, 32),
    Published(MMF_PAPER, "Debian Linux", "mmf_gain_pct", 20, 20),
)

# n_open mmf versus l_open: slower by this much (percent) on Debian and Digital.
MMF_NOPEN_SLOWDOWN = (
    Published(MMF_PAPER, "Debian Linux, Digital UNIX", "nopen_slowdown_pct", 30, 30,
              "setup cost of n_open mmf, '~30% slower'"),
)

# Sequential buffered-write throughput of FinerLRU over stock Linux (percent).
FINERLRU_GAIN = (
    Published(FINERLRU_PAPER, "Xeon Phi 7210 KNL, FF=256, 64-256 threads", "write_gain_pct",
              70, 140),
    Published(FINERLRU_PAPER, "Xeon Gold 6338 Icelake, large FF", "write_gain_pct", 100, 100,
              "'overall about 2x'"),
)
FINERLRU_GAIN_THREADS = (64, 128, 256)  # where the KNL range was measured

# Finer-LRU on four many-cores (KIPS 2025): the direction of the write-throughput change per
# chip, by the lab's preset of that chip ("gain" or "none"; the paper gives no percentages).
FINERLRU_CHIPS_PAPER = "Finer-LRU on other many-cores, KIPS 2025"
FINERLRU_CHIP_DIRECTION = {
    "knl-64": ("gain", "gains on KNL"),
    "icelake-32": ("gain", "gains on the Icelake Xeon; Intel parts lose throughput at the "
                           "maximum thread count"),
    "altra-80": ("gain", "gains on Altra, which plateaus without the drop"),
    "epyc2-64": ("none", "no change at any factor on EPYC2, saturating near 32 threads"),
}

# Share of folio_add_lru time waiting on the LRU lock with FinerLRU (percent, upper bounds).
FINERLRU_LOCK_WAIT = (
    Published(FINERLRU_PAPER, "Xeon Phi 7210 KNL, 256 threads", "lock_wait_pct", 0, 20),
    Published(FINERLRU_PAPER, "Xeon Gold 6338 Icelake, large FF", "lock_wait_pct", 10, 10),
)

# LDU speed-ups over stock on 120 cores (ratio).
LDU_SPEEDUP = (
    Published("LDU, Kookmin 2016", "8x Xeon E7-8870, 120 cores", "aim7_speedup", 1.5, 1.5),
    Published("LDU, Kookmin 2016", "8x Xeon E7-8870, 120 cores", "exim_speedup", 2.6, 2.6),
    Published("LDU, Kookmin 2016", "8x Xeon E7-8870, 120 cores", "lmbench_fork_speedup",
              2.7, 2.7),
)

# The hybrid DRAM/PCM buffer cache for mobile devices (seeds digest, section 4): its policy
# (foreground pages on DRAM, the rest on PCM) against LRU, means over memory sizes of 10%-100%
# of the workload's footprint, DRAM 5% of memory; trace-driven simulation of page requests
# recorded on a Nexus 7. Trace 1 is a foreground browser with push services (the lab's
# mobileapps scenario "push"), trace 2 many apps switched (scenario "switch").
MOBILE_PCM_PAPER = "hybrid DRAM/PCM mobile buffer cache, KIISE 2015"
MOBILE_PCM_TRACE = {"push": "Nexus 7 trace 1 (browser + pushes, fg:bg ~15:1)",
                    "switch": "Nexus 7 trace 2 (apps switched, fg:bg ~3:1)"}
# Cut in foreground execution time against LRU (percent; the paper's time model, see
# docs/pcm-policy.md "Simulation model").
MOBILE_PCM_FG_TIME_CUT = {
    "push": Published(MOBILE_PCM_PAPER, MOBILE_PCM_TRACE["push"], "fg_time_cut_pct", 58, 58),
    "switch": Published(MOBILE_PCM_PAPER, MOBILE_PCM_TRACE["switch"], "fg_time_cut_pct",
                        73, 73),
}
# The paper's time model (digest section 4): a page to or from storage costs 1000 DRAM
# accesses, and Table 1 gives a DRAM read 50 ns; their product is one reading of a flash page
# read (the paper charges evictions, not misses, and its text is cut where it says which).
MOBILE_PCM_STORAGE_UNITS = 1000
MOBILE_PCM_DRAM_READ_NS = 50.0
# Cut in memory energy against LRU (percent; Table 1 energies, DRAM refresh not counted).
MOBILE_PCM_ENERGY_CUT = {
    "push": Published(MOBILE_PCM_PAPER, MOBILE_PCM_TRACE["push"], "energy_cut_pct", 22, 22),
    "switch": Published(MOBILE_PCM_PAPER, MOBILE_PCM_TRACE["switch"], "energy_cut_pct",
                        23, 23),
}
# A claim without a number: the policy's hit ratio is never below LRU's (nor 2Q's).
MOBILE_PCM_HIT_RATIO_CLAIM = "hit ratio never below LRU's or 2Q's"
