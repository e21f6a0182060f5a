################################################################################
#
# manylab-workloads
#
################################################################################

# The repository's workloads/ folder, next to this external tree.
MANYLAB_WORKLOADS_VERSION = local
MANYLAB_WORKLOADS_SITE = $(BR2_EXTERNAL_MANYLAB_PATH)/../workloads
MANYLAB_WORKLOADS_SITE_METHOD = local

# What to build, with which flags, comes from the one contents list that the lab's own
# image builder (manylab/image.py) reads too: lines "KIND NAME..." of image-contents.txt.
MANYLAB_WORKLOADS_CONTENTS = $(BR2_EXTERNAL_MANYLAB_PATH)/image-contents.txt
MANYLAB_WORKLOADS_LIST = $(strip $(shell sed -n 's/^$(1) //p' $(MANYLAB_WORKLOADS_CONTENTS)))
MANYLAB_WORKLOADS_PROGRAMS = $(call MANYLAB_WORKLOADS_LIST,workloads)
MANYLAB_WORKLOADS_TOOLS = $(call MANYLAB_WORKLOADS_LIST,tools)
MANYLAB_WORKLOADS_FLAGS = $(call MANYLAB_WORKLOADS_LIST,cflags) -I$(@D)/include

define MANYLAB_WORKLOADS_BUILD_CMDS
	mkdir -p $(@D)/build
	$(foreach p,$(MANYLAB_WORKLOADS_PROGRAMS),\
		$(TARGET_CC) $(MANYLAB_WORKLOADS_FLAGS) $(@D)/$(p).c -o $(@D)/build/$(p)$(sep))
	$(foreach p,$(MANYLAB_WORKLOADS_TOOLS),\
		$(TARGET_CC) $(MANYLAB_WORKLOADS_FLAGS) $(@D)/tools/$(p).c -o $(@D)/build/$(p)$(sep))
endef

# /manylab/bin, where the lab's init (buildroot-overlay/init) puts them first in PATH
define MANYLAB_WORKLOADS_INSTALL_TARGET_CMDS
	$(foreach p,$(MANYLAB_WORKLOADS_PROGRAMS) $(MANYLAB_WORKLOADS_TOOLS),\
		$(INSTALL) -D -m 0755 $(@D)/build/$(p) $(TARGET_DIR)/manylab/bin/$(p)$(sep))
endef

$(eval $(generic-package))
