#ifndef CTOOLNEXUS_SHIM_H
#define CTOOLNEXUS_SHIM_H
/* The installed header, found through `pkg-config --cflags toolnexus`. */
#include <toolnexus.h>
#endif
