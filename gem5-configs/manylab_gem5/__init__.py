"""manylab's gem5 v24 standard-library components: a Garnet 2D mesh laid out like a plugin
preset, Ruby caches placed on it (MESI_Two_Level for x86, CHI for arm64), DDR/MCDRAM/PCM
memory regions, a switchable processor, and the boards (x86, Arm) that boot the lab's kernel
and root image."""
