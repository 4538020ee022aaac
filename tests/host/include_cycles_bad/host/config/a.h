/* Fixture for host_include_cycles_bad: a.h and b.h include each other. */
#include "host/config/b.h"
