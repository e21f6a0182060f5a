// SPDX-License-Identifier: MIT
/*
 * run-end: the guest's last word before it powers off. Executes the end-of-run marker
 * (manylab_roi.h), at which the plugin writes its statistics: the power-off that follows ends
 * at a moment the host's scheduling picks, and none of it is counted.
 */
#include "manylab_roi.h"

int main(void)
{
	MANYLAB_ROI_MARK(MANYLAB_ROI_OP_RUN_END, 0);
	return 0;
}
