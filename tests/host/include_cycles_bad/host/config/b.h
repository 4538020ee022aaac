/* Fixture: the other half of the cycle. */
#include "host/config/a.h"
