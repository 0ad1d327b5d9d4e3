#!/bin/sh
# Can PATH be opened for reading (by the user it runs as)?
# EXECD_SH_CAN_READ (fcgi/execd_scripts.h: arguments, output, exit codes).
exec <"$1"
