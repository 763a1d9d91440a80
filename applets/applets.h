/* applets.h: the entry point of every applet in applets.def, declared once. */
#ifndef FB_APPLETS_H
#define FB_APPLETS_H

#define APPLET(name, id) int id##_main(int argc, char **argv);
#include "applets.def"
#undef APPLET

#endif
