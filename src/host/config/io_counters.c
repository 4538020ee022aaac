/* SPDX-License-Identifier: MIT */
/* The I/O counters' names, in enum order (io_counters.h). */
#include "host/config/io_counters.h"

const char *const uroce_io_counter_names[UROCE_IO_CNT_MAX] = {
#define UROCE_IO_CNT_NAME(id, name) [UROCE_IO_##id] = name,
	UROCE_IO_COUNTERS(UROCE_IO_CNT_NAME)
#undef UROCE_IO_CNT_NAME
};
