"""manylab's gem5 v24 standard-library components: a Garnet 2D mesh laid out like a plugin
preset, MESI_Two_Level Ruby caches placed on it, DDR/MCDRAM/PCM memory regions, a switchable
processor, and the x86 board that boots the lab's kernel and root image."""
