include $(sort $(wildcard $(BR2_EXTERNAL_MANYLAB_PATH)/package/*/*.mk))
