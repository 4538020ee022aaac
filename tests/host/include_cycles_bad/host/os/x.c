/* Fixture: an os/ file that includes an io/ header, a layer above it. */
#include "host/io/y.h"
